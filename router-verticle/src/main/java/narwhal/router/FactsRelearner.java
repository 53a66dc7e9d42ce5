package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.checks.CheckFailure;
import narwhal.engines.checks.EngineChecks;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * Keeps {@link EngineFacts} true across hot reloads: an engine that a reload adds, or whose {@code url}, {@code role},
 * {@code attestation_url} or {@code kv_side_channel} it changes (an engine moved to another host under the same iid),
 * is a new engine: its old facts are forgotten at once and its attestation is read again, so a handoff from it is
 * checked against what the engine now attests, not against the engine it replaced (the breaker keeps such an engine
 * out until its readmission checks pass). Its context ({@code max_model_len}) comes from placement's readings of
 * {@code /v1/models}, the one reader of them while the replica serves ({@link #listed}).
 */
final class FactsRelearner {
  private static final Logger LOG = Logger.getLogger(FactsRelearner.class.getName());

  /** Local address: re-read one engine's facts ({@code {"iid": …}}), answered once read (or once reading failed). */
  static final String RELEARN = "narwhal.router.relearn";

  private final EngineFacts facts;
  private final EngineChecks checks;
  private Map<String, EngineConfig> known = new HashMap<>();

  FactsRelearner(Vertx vertx, Supplier<NarwhalConfig> config, EngineFacts facts, UnaryOperator<String> env) {
    this.facts = facts;
    this.checks = new EngineChecks(vertx, config, env);
    remember(config.get().engines());
  }

  /** The reloaded engine list: forgets and re-reads the facts of every added or changed engine. */
  void reloaded(List<EngineConfig> engines) {
    for (EngineConfig engine : engines) {
      if (engine.equals(known.get(engine.iid()))) continue;
      facts.forget(engine.iid());
      checks.attestation(engine)
          .onSuccess(attested -> facts.learn(engine.iid(), attested))
          .onFailure(err -> LOG.info(() -> "engine " + engine.iid() + ": no attestation after the reload ("
              + CheckFailure.reasonOf(err) + "); its configured facts stand"));
    }
    known.keySet().stream().filter(iid -> engines.stream().noneMatch(e -> e.iid().equals(iid))).toList().forEach(facts::forget);
    remember(engines);
  }

  /**
   * Placement read engine {@code iid}'s {@code /v1/models} ({@link narwhal.common.bus.Addresses#PLACEMENT_LISTED}: at
   * start, when it comes back to serving, on a reload, every {@code placement.models_refresh_s}): the context its card
   * gives is the engine's, so a smaller one a {@code /tokenize} answer reported, or an engine restarted with another
   * {@code --max-model-len}, does not stand past the next reading. An engine this replica does not know is ignored.
   */
  void listed(JsonObject reading) {
    if (reading == null || !(reading.getValue("iid") instanceof String iid) || !known.containsKey(iid)) return;
    if (reading.getValue("max_model_len") instanceof Number n && n.intValue() > 0) facts.maxModelLen(iid, n.intValue());
  }

  /**
   * An engine came back to serving (readmitted, undrained, its quarantine ended): its attestation is read again, so an
   * engine restarted on its URL with another KV side channel is checked against that one. (Its context comes with
   * placement's reading of its {@code /v1/models} on the same return, {@link #listed}.)
   */
  void readmitted(String iid) {
    EngineConfig engine = known.get(iid);
    if (engine == null) return;
    checks.attestation(engine).onSuccess(attested -> facts.learn(iid, attested))
        .onFailure(err -> LOG.fine(() -> "engine " + iid + ": no attestation after readmission ("
            + CheckFailure.reasonOf(err) + "); its learned facts stand"));
  }

  /**
   * Whether a leg's fault is the first sign of a producer restarted in place (same URL, another NIXL side channel or
   * engine id): its handoff names another endpoint than the one it attested. Its facts are re-read and the request
   * tried again before any fault is counted.
   */
  static boolean signsARestart(narwhal.common.fault.EngineFault fault) {
    return fault.kind() == narwhal.common.fault.FaultKind.INVALID_DESCRIPTOR && fault.detail() != null
        && fault.detail().contains("endpoint mismatch");
  }

  /**
   * Re-reads engine {@code iid}'s attestation now (a restart in place); true when what it attests changed (the engine
   * restarted), false when it is the same or could not be read.
   */
  Future<Boolean> relearn(String iid) {
    EngineConfig engine = known.get(iid);
    if (engine == null) return Future.succeededFuture(false);
    EngineFacts.Facts before = facts.get(iid);
    return checks.attestation(engine).map(attested -> {
          facts.learn(iid, attested);
          return !facts.get(iid).equals(before);
        })
        .onFailure(err -> LOG.info(() -> "engine " + iid + ": no attestation on a handoff naming another endpoint ("
            + CheckFailure.reasonOf(err) + "); its learned facts stand"))
        .otherwise(false);
  }

  private void remember(List<EngineConfig> engines) {
    Map<String, EngineConfig> next = new HashMap<>();
    engines.forEach(e -> next.put(e.iid(), e));
    known = next;
  }

  Future<Void> close() {
    return checks.close();
  }
}
