package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
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
 * is a new engine: its old facts are forgotten at once and its attestation and context ({@code max_model_len}) are read
 * again, so a handoff from it is checked against what the engine now attests, not against the engine it replaced. (The breaker keeps such an engine
 * out until its readmission checks pass.)
 */
final class FactsRelearner {
  private static final Logger LOG = Logger.getLogger(FactsRelearner.class.getName());

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
      checks.modelCard(engine).onSuccess(card -> {
        if (card.getValue("max_model_len") instanceof Number n && n.intValue() > 0) facts.maxModelLen(engine.iid(), n.intValue());
      });
      checks.attestation(engine)
          .onSuccess(attested -> facts.learn(engine.iid(), attested))
          .onFailure(err -> LOG.info(() -> "engine " + engine.iid() + ": no attestation after the reload ("
              + CheckFailure.reasonOf(err) + "); its configured facts stand"));
    }
    known.keySet().stream().filter(iid -> engines.stream().noneMatch(e -> e.iid().equals(iid))).toList().forEach(facts::forget);
    remember(engines);
  }

  /**
   * An engine came back to serving (readmitted, undrained, its quarantine ended): its context is read again from its
   * {@code /v1/models}, so a smaller one a {@code /tokenize} answer reported, or an old listing, does not stand for good;
   * and its attestation, so an engine restarted on its URL with another KV side channel is checked against that one.
   */
  void readmitted(String iid) {
    known.values().stream().filter(e -> e.iid().equals(iid)).findFirst().ifPresent(engine -> {
      checks.modelCard(engine)
          .onSuccess(card -> {
            if (card.getValue("max_model_len") instanceof Number n && n.intValue() > 0) facts.maxModelLen(iid, n.intValue());
          })
          .onFailure(err -> LOG.fine(() -> "engine " + iid + ": /v1/models not read after readmission ("
              + CheckFailure.reasonOf(err) + "); its learned context stands"));
      checks.attestation(engine).onSuccess(attested -> facts.learn(iid, attested))
          .onFailure(err -> LOG.fine(() -> "engine " + iid + ": no attestation after readmission ("
              + CheckFailure.reasonOf(err) + "); its learned facts stand"));
    });
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
