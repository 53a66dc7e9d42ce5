package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

/**
 * The whole-wave fleet hold put on or lifted (docs/operations.md#whole-wave-runbook), as it crosses the cluster: published on
 * {@link Addresses#FLEET_CHANGED} and kept under {@link SharedState#FLEET_HOLD_KEY}, versioned like an engine's state.
 */
public record FleetHoldEvent(boolean held, long changedMs, String origin) {

  public StateVersion version() {
    return new StateVersion(changedMs, origin);
  }

  public JsonObject toJson() {
    return new JsonObject().put("fleet_hold", held).put("changed_ms", changedMs).put("origin", origin);
  }

  /** Parses an event; null when it is not a versioned fleet hold (an engine's state, or one without a version). */
  public static FleetHoldEvent fromJson(JsonObject json) {
    if (json == null || !(json.getValue("fleet_hold") instanceof Boolean held)
        || !(json.getValue("changed_ms") instanceof Number changed) || !(json.getValue("origin") instanceof String origin)) {
      return null;
    }
    return new FleetHoldEvent(held, changed.longValue(), origin);
  }
}
