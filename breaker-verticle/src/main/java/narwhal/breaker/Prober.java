package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.checks.CheckFailure;
import narwhal.engines.checks.EngineChecks;
import narwhal.engines.checks.ProbeBounds;

import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Runs the breaker's probes against real engines (docs/operations.md#breaker-states) through {@link EngineChecks}, as preflight
 * does: a {@code /health} check; an inference probe of two legs, each bounded by {@code engine.first_token_timeout_s},
 * on a unique prompt; lifecycle validation for fleets with a pinned contract. An inference probe whose producer
 * cannot make a handoff is inconclusive, not a failure of the probed engine; one of a model with no producer at all is
 * a direct generation. Every result says why.
 */
final class Prober {
  private final Supplier<NarwhalConfig> config;
  private final EngineChecks checks;

  /** @param env reads environment variables (the engines' API key) */
  Prober(Vertx vertx, Supplier<NarwhalConfig> config, UnaryOperator<String> env) {
    this.config = config;
    this.checks = new EngineChecks(vertx, config, env);
  }

  Future<Boolean> healthy(EngineConfig engine) {
    return checks.health(engine).map(v -> true).otherwise(false);
  }

  Future<ProbeResult> health(EngineConfig engine) {
    return checks.health(engine).map(v -> ProbeResult.passed("health 200"))
        .otherwise(err -> ProbeResult.failed(CheckFailure.describe(err)));
  }

  /**
   * Probes {@code target}; {@code producer} is the engine that must make the handoff (the original producer of a
   * failed crossed decode), or null to pick one: the target itself when it can prefill, else a serving producer of
   * the target's model.
   */
  Future<ProbeResult> inference(EngineConfig target, EngineConfig producer, Predicate<String> serving, boolean streamed) {
    List<EngineConfig> fleet = config.get().engines().stream().filter(e -> e.model().equals(target.model())).toList();
    if (!target.role().canDecode()) {
      EngineConfig consumer = fleet.stream().filter(e -> e.role().canDecode() && serving.test(e.iid())).findFirst().orElse(null);
      return transfer(target, consumer, streamed).map(failure -> {
        if (failure == null) {
          return ProbeResult.passed("made a valid handoff" + (consumer == null ? "" : " that " + consumer.iid() + " decoded"));
        }
        return isPrefill(failure) ? ProbeResult.failed("prefill on " + target.iid() + " failed: " + failure.reason())
            : ProbeResult.inconclusive("the handoff did not decode on " + consumer.iid() + ": " + failure.reason());
      });
    }
    if (producer == null && fleet.stream().noneMatch(e -> e.role().canPrefill())) return generationAlone(target);
    EngineConfig p = producer != null ? producer : target.role().canPrefill() ? target
        : fleet.stream().filter(e -> e.role().canPrefill() && serving.test(e.iid())).findFirst().orElse(null);
    if (p == null) return Future.succeededFuture(ProbeResult.inconclusive("no producer can make a handoff"));
    if (p != target && !serving.test(p.iid())) {
      return Future.succeededFuture(ProbeResult.inconclusive("producer " + p.iid() + " is not serving"));
    }
    return transfer(p, target, streamed).map(failure -> {
      if (failure == null) return ProbeResult.passed("decoded a handoff from " + p.iid());
      if (!isPrefill(failure)) return ProbeResult.failed("decode of a handoff from " + p.iid() + " failed: " + failure.reason());
      return p == target ? ProbeResult.failed("prefill on " + p.iid() + " failed: " + failure.reason())
          : ProbeResult.inconclusive("producer " + p.iid() + " could not make a handoff: " + failure.reason());
    });
  }

  /**
   * Lifecycle validation (docs/operations.md#breaker-states), what preflight checks of one engine: health, model listed,
   * attestation against the pinned {@code engine_contract} (when there is one), a direct generation, an inference probe (a role-permitted KV
   * transfer), health again.
   */
  Future<ProbeResult> lifecycle(EngineConfig target, Predicate<String> serving, boolean streamed) {
    return checks.health(target)
        .compose(v -> checks.modelListed(target))
        .compose(v -> config.get().engineContract() == null ? Future.succeededFuture() : checks.contract(target))
        .compose(v -> checks.generation(target))
        .map(v -> ProbeResult.passed("checks passed"))
        .otherwise(err -> ProbeResult.failed(CheckFailure.describe(err)))
        .compose(r -> r.passed() ? inference(target, null, serving, streamed) : Future.succeededFuture(r))
        .compose(r -> !r.passed() ? Future.succeededFuture(r)
            : health(target).map(again -> again.passed() ? ProbeResult.passed("lifecycle validated") : again));
  }

  /**
   * The probe of a decode engine whose model has no producer in the fleet (it serves the endpoints an engine runs
   * whole): no handoff can reach it, so the transfer check does not apply and a direct generation stands for it.
   */
  private Future<ProbeResult> generationAlone(EngineConfig target) {
    return checks.generation(target)
        .map(v -> ProbeResult.passed("generated; model " + target.model() + " has no producer, so no handoff to check"))
        .otherwise(err -> ProbeResult.failed(CheckFailure.describe(err)));
  }

  /** The probe's transfer: null when it passed, else the failure of its prefill or decode step. */
  private Future<CheckFailure> transfer(EngineConfig producer, EngineConfig consumer, boolean streamed) {
    NarwhalConfig cfg = config.get();
    ProbeBounds bounds = streamed ? ProbeBounds.streamed(cfg) : ProbeBounds.inference(cfg);
    return checks.transfer(producer, consumer, checks.expectations(null), bounds, "probe")
        .map(v -> (CheckFailure) null)
        .otherwise(err -> err instanceof CheckFailure f ? f : new CheckFailure("prefill", CheckFailure.reasonOf(err)));
  }

  private static boolean isPrefill(CheckFailure failure) {
    return "prefill".equals(failure.step());
  }

  Future<Void> close() {
    return checks.close();
  }
}
