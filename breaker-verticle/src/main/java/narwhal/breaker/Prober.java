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
import java.util.UUID;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Runs the breaker's probes against real engines (docs/operations.md#breaker-states): a {@code /health} check; an inference
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

  Future<ProbeResult> health(EngineConfig engine) {
    return healthy(engine).map(ok -> ok ? ProbeResult.passed("health 200") : ProbeResult.failed("health check failed"));
  }

  /**
   * Probes {@code target}; {@code producer} is the engine that must make the handoff (the original producer of a
   * failed crossed decode), or null to pick one: the target itself when it can prefill, else a serving producer.
   */
  Future<ProbeResult> inference(EngineConfig target, EngineConfig producer, Predicate<String> serving) {
    List<EngineConfig> fleet = config.get().engines();
    if (!target.role().canDecode()) {
      EngineConfig consumer = fleet.stream().filter(e -> e.role().canDecode() && serving.test(e.iid())).findFirst().orElse(null);
      return legs(target, consumer).map(r -> switch (r) {
        case PASSED -> ProbeResult.passed("made a valid handoff" + (consumer == null ? "" : " that " + consumer.iid() + " decoded"));
        case PREFILL_FAILED -> ProbeResult.failed("prefill failed on " + target.iid());
        case DECODE_FAILED -> ProbeResult.inconclusive("the handoff did not decode on " + consumer.iid());
      });
    }
    EngineConfig p = producer != null ? producer : target.role().canPrefill() ? target
        : fleet.stream().filter(e -> e.role().canPrefill() && serving.test(e.iid())).findFirst().orElse(null);
    if (p == null) return Future.succeededFuture(ProbeResult.inconclusive("no producer can make a handoff"));
    if (p != target && !serving.test(p.iid())) {
      return Future.succeededFuture(ProbeResult.inconclusive("producer " + p.iid() + " is not serving"));
    }
    return legs(p, target).map(r -> switch (r) {
      case PASSED -> ProbeResult.passed("decoded a handoff from " + p.iid());
      case DECODE_FAILED -> ProbeResult.failed("decode of a handoff from " + p.iid() + " failed");
      case PREFILL_FAILED -> p == target ? ProbeResult.failed("prefill failed on " + p.iid())
          : ProbeResult.inconclusive("producer " + p.iid() + " could not make a handoff");
    });
  }

  /** Lifecycle validation: health, model listed, attestation against the contract, an inference probe, health again. */
  Future<ProbeResult> lifecycle(EngineConfig target, Predicate<String> serving) {
    return health(target)
        .compose(r -> r.passed() ? attested(target) : Future.succeededFuture(r))
        .compose(r -> r.passed() ? inference(target, null, serving) : Future.succeededFuture(r))
        .compose(r -> !r.passed() ? Future.succeededFuture(r)
            : health(target).map(again -> again.passed() ? ProbeResult.passed("lifecycle validated") : again));
  }

  private Future<ProbeResult> attested(EngineConfig target) {
    NarwhalConfig cfg = config.get();
    return getJson(target.url() + "/v1/models")
        .map(models -> models.getJsonArray("data").stream().anyMatch(m -> cfg.model().equals(((JsonObject) m).getString("id"))))
        .compose(listed -> !listed ? Future.succeededFuture(ProbeResult.failed("model " + cfg.model() + " not listed"))
            : getJson(target.attestationUrlOrDefault()).map(attestation -> {
              String mismatch = EngineContract.mismatch(cfg.engineContract(), attestation);
              return mismatch == null ? ProbeResult.passed("attestation matches") : ProbeResult.failed("contract: " + mismatch);
            }))
        .otherwise(err -> ProbeResult.failed("attestation unavailable"));
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
