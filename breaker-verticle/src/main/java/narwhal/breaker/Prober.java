package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.DecodeCall;
import narwhal.engines.client.EngineClient;
import narwhal.engines.client.EngineClientOptions;
import narwhal.engines.client.PrefillCall;
import narwhal.engines.connector.EngineContract;
import narwhal.engines.connector.HandoffExpectations;

import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Runs the breaker's probes against real engines (CONTRACT §6.3–6.5): a {@code /health} check; an inference
 * probe of two legs, each bounded by {@code engine.first_token_timeout_s}, on a unique prompt; lifecycle
 * validation for fleets with a pinned contract. An inference probe whose producer cannot make a handoff is
 * inconclusive, not a failure of the probed engine.
 */
final class Prober {
  private final Vertx vertx;
  private final Supplier<NarwhalConfig> config;
  private final HttpClientAgent http;
  private final EngineClient engines;

  Prober(Vertx vertx, Supplier<NarwhalConfig> config) {
    this.vertx = vertx;
    this.config = config;
    NarwhalConfig cfg = config.get();
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout((int) cfg.engine().connectTimeoutMs()));
    this.engines = new EngineClient(vertx, new EngineClientOptions(cfg.engine().connectTimeoutMs(), 8,
        cfg.serving().maxResponseBytes(), EngineClientOptions.DEFAULT_MAX_EVENT_BYTES, ""));
  }

  Future<Boolean> healthy(EngineConfig engine) {
    return http.request(new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(engine.url() + "/health")
            .setTimeout(config.get().engine().healthTimeoutMs()))
        .compose(req -> req.send())
        .compose(resp -> resp.body().map(b -> resp.statusCode() == 200))
        .otherwise(false);
  }

  /**
   * Probes {@code target}; {@code producer} is the engine that must make the handoff (the original producer of a
   * failed crossed decode), or null to pick one: the target itself when it can prefill, else a serving producer.
   */
  Future<ProbeOutcome> inference(EngineConfig target, EngineConfig producer, Predicate<String> serving) {
    NarwhalConfig cfg = config.get();
    List<EngineConfig> fleet = cfg.engines();
    if (!target.role().canDecode()) {
      Optional<EngineConfig> consumer = fleet.stream().filter(e -> e.role().canDecode() && serving.test(e.iid())).findFirst();
      return legs(target, consumer.orElse(null)).map(r -> r == Legs.PREFILL_FAILED ? ProbeOutcome.FAILED
          : r == Legs.DECODE_FAILED ? ProbeOutcome.INCONCLUSIVE : ProbeOutcome.PASSED);
    }
    EngineConfig p = producer != null ? producer : target.role().canPrefill() ? target
        : fleet.stream().filter(e -> e.role().canPrefill() && serving.test(e.iid())).findFirst().orElse(null);
    if (p == null || (p != target && !serving.test(p.iid()))) return Future.succeededFuture(ProbeOutcome.INCONCLUSIVE);
    return legs(p, target).map(r -> switch (r) {
      case PASSED -> ProbeOutcome.PASSED;
      case DECODE_FAILED -> ProbeOutcome.FAILED;
      case PREFILL_FAILED -> p == target ? ProbeOutcome.FAILED : ProbeOutcome.INCONCLUSIVE;
    });
  }

  /** Lifecycle validation: health, attestation against the contract, model listed, an inference probe, health again. */
  Future<ProbeOutcome> lifecycle(EngineConfig target, Predicate<String> serving) {
    NarwhalConfig cfg = config.get();
    return healthy(target)
        .compose(ok -> ok ? attested(target, cfg) : Future.succeededFuture(false))
        .compose(ok -> ok ? inference(target, null, serving) : Future.succeededFuture(ProbeOutcome.FAILED))
        .compose(outcome -> outcome != ProbeOutcome.PASSED ? Future.succeededFuture(outcome)
            : healthy(target).map(ok -> ok ? ProbeOutcome.PASSED : ProbeOutcome.FAILED));
  }

  private Future<Boolean> attested(EngineConfig target, NarwhalConfig cfg) {
    return getJson(target.url() + "/v1/models")
        .map(models -> models.getJsonArray("data").stream().anyMatch(m -> cfg.model().equals(((JsonObject) m).getString("id"))))
        .compose(listed -> !listed ? Future.succeededFuture(false) : getJson(target.attestationUrlOrDefault())
            .map(attestation -> EngineContract.mismatch(cfg.engineContract(), attestation) == null))
        .otherwise(false);
  }

  private Future<JsonObject> getJson(String url) {
    return http.request(new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(url).setTimeout(config.get().engine().healthTimeoutMs()))
        .compose(req -> req.send())
        .compose(resp -> resp.statusCode() == 200 ? resp.body().map(b -> b.toJsonObject())
            : Future.failedFuture(new IllegalStateException("HTTP " + resp.statusCode())));
  }

  private enum Legs { PASSED, PREFILL_FAILED, DECODE_FAILED }

  private Future<Legs> legs(EngineConfig producer, EngineConfig consumer) {
    NarwhalConfig cfg = config.get();
    long bound = cfg.engine().firstTokenTimeoutMs();
    String rid = "probe-" + UUID.randomUUID();
    JsonObject body = new JsonObject().put("prompt", "narwhal probe " + rid).put("max_tokens", 1);
    return engines.prefill(new PrefillCall(producer.url(), "/v1/completions", body, cfg.model(), rid + "-prefill", bound,
            HandoffExpectations.nixlPull()))
        .transform(prefill -> {
          if (prefill.failed()) return Future.succeededFuture(Legs.PREFILL_FAILED);
          if (consumer == null) return Future.succeededFuture(Legs.PASSED);
          return engines.decode(prefill.result(), new DecodeCall(consumer.url(), "/v1/completions", body, cfg.model(),
                  rid + "-decode", consumer.iid().equals(producer.iid()), bound, bound)).end()
              .map(end -> Legs.PASSED).otherwise(Legs.DECODE_FAILED);
        });
  }

  Future<Void> close() {
    return Future.join(http.close(), engines.close()).mapEmpty();
  }
}
