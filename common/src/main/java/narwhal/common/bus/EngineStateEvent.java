package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

/**
 * One engine's breaker state as it crosses the cluster (docs/architecture.md#what-lives-in-the-cluster): published on {@link Addresses#FLEET_CHANGED}
 * and kept as JSON text in the {@link SharedState#ENGINE_STATE_MAP} shared map. Besides {@code iid}, {@code state} and
 * {@code cause}, which placement reads, it carries what another replica's breaker needs to take the state over:
 * {@code until_ms} (wall-clock epoch ms) — the quarantine's end, so every replica ends it at the same instant, or for a
 * held or ejected engine when it may be probed next, so every replica backs off alike —, the producer an inference
 * probe must use, and its {@link StateVersion} ({@code changed_ms}, {@code origin}).
 */
public record EngineStateEvent(String iid, EngineState state, String cause, long untilMs, String producer, long changedMs,
                               String origin) {

  /**
   * Whether this is a leftover for an engine a replica added at {@code addedAtMs}: a serving state from before the add
   * belongs to an earlier engine under the iid (the shared map keeps states of removed engines), not to a check of
   * this one. Any other state (a drain, a quarantine, an ejection) is an operator's or breaker's decision and stands.
   */
  public boolean leftoverFor(long addedAtMs) {
    return state == EngineState.SERVING && changedMs < addedAtMs;
  }

  public StateVersion version() {
    return new StateVersion(changedMs, origin);
  }

  /** The same state with another cause (the cause of the change being published, rather than the one stored). */
  public EngineStateEvent withCause(String newCause) {
    return new EngineStateEvent(iid, state, newCause, untilMs, producer, changedMs, origin);
  }

  public JsonObject toJson() {
    JsonObject json = new JsonObject().put("iid", iid).put("state", state.wireName()).put("cause", cause);
    if (untilMs > 0) json.put("until_ms", untilMs);
    if (producer != null) json.put("producer", producer);
    return json.put("changed_ms", changedMs).put("origin", origin);
  }

  /** Parses an event; null when it is not a versioned engine state (a fleet-hold event, or one without an origin). */
  public static EngineStateEvent fromJson(JsonObject json) {
    if (json == null || !(json.getValue("iid") instanceof String iid) || !(json.getValue("state") instanceof String state)
        || !(json.getValue("origin") instanceof String origin) || !(json.getValue("changed_ms") instanceof Number changed)) {
      return null;
    }
    Number until = json.getValue("until_ms") instanceof Number n ? n : 0;
    return new EngineStateEvent(iid, EngineState.parse(state), json.getString("cause"), until.longValue(),
        json.getString("producer"), changed.longValue(), origin);
  }
}
