package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.DecodeCall;
import narwhal.engines.client.EngineClient;
import narwhal.engines.client.EngineClientOptions;
import narwhal.engines.client.PrefillCall;
import narwhal.engines.connector.EngineContract;
import narwhal.engines.connector.HandoffExpectations;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * Checks the fleet before serving (docs/operations.md#processes): every engine healthy, listing the model and matching the
 * pinned {@code engine_contract}; every prefill-permitted engine producing a valid handoff; every
 * role-permitted producer→consumer pair decoding with it. Records attested facts (KV lease, side channel,
 * connector) for the router as it goes.
 */
public final class Preflight {
  private final Vertx vertx;
  private final NarwhalConfig cfg;
  private final EngineFacts facts;

  public Preflight(Vertx vertx, NarwhalConfig cfg, EngineFacts facts) {
    this.vertx = vertx;
    this.cfg = cfg;
    this.facts = facts;
  }

  /**
   * Runs every check in turn, reporting each result to {@code progress} as it completes. The checks run on a Vert.x
   * context whoever calls: HTTP exchanges wired from a plain thread can lose a fast response.
   */
  public Future<PreflightReport> run(Consumer<PreflightReport.Check> progress) {
    if (Vertx.currentContext() != null) return checks(progress);
    Promise<PreflightReport> report = Promise.promise();
    vertx.getOrCreateContext().runOnContext(v -> checks(progress).onComplete(report));
    return report.future();
  }

  private Future<PreflightReport> checks(Consumer<PreflightReport.Check> progress) {
    HttpClientAgent http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout((int) cfg.engine().connectTimeoutMs()));
    EngineClient client = new EngineClient(vertx, new EngineClientOptions(cfg.engine().connectTimeoutMs(), 4,
        cfg.serving().maxResponseBytes(), EngineClientOptions.DEFAULT_MAX_EVENT_BYTES, ""));
    List<PreflightReport.Check> checks = new ArrayList<>();
    Consumer<PreflightReport.Check> record = c -> {
      checks.add(c);
      progress.accept(c);
    };
    Future<Void> chain = Future.succeededFuture();
    for (EngineConfig engine : cfg.engines()) {
      chain = chain.compose(v -> engineChecks(http, engine, record));
    }
    for (EngineConfig producer : cfg.engines()) {
      if (!producer.role().canPrefill()) continue;
      for (EngineConfig consumer : cfg.engines()) {
        if (!consumer.role().canDecode()) continue;
        if (consumer.iid().equals(producer.iid()) && cfg.engines().size() > 1) continue;
        chain = chain.compose(v -> transferCheck(client, producer, consumer, record));
      }
    }
    return chain.eventually(() -> Future.join(http.close(), client.close())).map(v -> new PreflightReport(checks));
  }

  private Future<Void> engineChecks(HttpClientAgent http, EngineConfig engine, Consumer<PreflightReport.Check> record) {
    return get(http, engine.url() + "/health")
        .map(body -> true)
        .otherwise(false)
        .compose(healthy -> {
          record.accept(new PreflightReport.Check(engine.iid(), "health", healthy, healthy ? "200" : "not healthy or unreachable"));
          if (!healthy) return Future.succeededFuture();
          return get(http, engine.url() + "/v1/models").map(Buffer::toJsonObject).map(this::listsModel).otherwise(false)
              .compose(listed -> {
                record.accept(new PreflightReport.Check(engine.iid(), "model", listed, listed ? cfg.model() : "model not listed"));
                return get(http, engine.attestationUrlOrDefault()).map(Buffer::toJsonObject)
                    .map(attestation -> {
                      String mismatch = EngineContract.mismatch(cfg.engineContract(), attestation);
                      learn(engine, attestation);
                      record.accept(new PreflightReport.Check(engine.iid(), "contract", mismatch == null,
                          mismatch == null ? (cfg.engineContract() == null ? "no contract pinned" : "matches") : mismatch));
                      return (Void) null;
                    })
                    .recover(err -> {
                      boolean required = cfg.engineContract() != null;
                      record.accept(new PreflightReport.Check(engine.iid(), "contract", !required,
                          required ? "attestation unavailable" : "no attestation; no contract pinned"));
                      return Future.succeededFuture();
                    });
              });
        });
  }

  private Future<Void> transferCheck(EngineClient client, EngineConfig producer, EngineConfig consumer,
                                     Consumer<PreflightReport.Check> record) {
    String target = producer.iid() + "→" + consumer.iid();
    JsonObject body = new JsonObject().put("model", cfg.model())
        .put("prompt", "narwhal preflight " + UUID.randomUUID()).put("max_tokens", 2);
    String rid = "preflight-" + UUID.randomUUID();
    EngineFacts.Facts pf = facts.get(producer.iid());
    HandoffExpectations expected = new HandoffExpectations(HandoffExpectations.DEFAULT_TRANSFER_MODE,
        pf.connector() != null ? pf.connector() : cfg.engine().connector(), cfg.engine().connector(), pf.sideChannel());
    return client.prefill(new PrefillCall(producer.url(), "/v1/completions", body, cfg.model(), rid + "-prefill",
            cfg.serving().prefillTimeoutMs(), expected))
        .compose(handoff -> client.decode(handoff, new DecodeCall(consumer.url(), "/v1/completions", body, cfg.model(),
            rid + "-decode", consumer.iid().equals(producer.iid()), cfg.engine().firstTokenTimeoutMs(),
            cfg.engine().decodeReadTimeoutMs())).end())
        .map(end -> {
          record.accept(new PreflightReport.Check(target, "kv transfer", true, "decoded with the handoff"));
          return (Void) null;
        })
        .recover(err -> {
          record.accept(new PreflightReport.Check(target, "kv transfer", false, err.getMessage()));
          return Future.succeededFuture();
        });
  }

  private boolean listsModel(JsonObject models) {
    JsonArray data = models.getJsonArray("data", new JsonArray());
    return data.stream().anyMatch(m -> m instanceof JsonObject o && cfg.model().equals(o.getString("id")));
  }

  private void learn(EngineConfig engine, JsonObject attestation) {
    JsonObject kv = attestation.getJsonObject("kv_transfer_config", new JsonObject());
    JsonObject extra = kv.getJsonObject("kv_connector_extra_config", new JsonObject());
    Double lease = extra.getValue("kv_lease_duration") instanceof Number n ? n.doubleValue() : null;
    JsonObject side = attestation.getJsonObject("kv_side_channel");
    String sideChannel = !engine.kvSideChannel().isEmpty() ? engine.kvSideChannel()
        : side != null && side.getValue("host") != null ? side.getValue("host") + ":" + side.getValue("port") : null;
    String connector = kv.getValue("kv_connector") instanceof String c ? EngineContract.connectorFamily(c) : null;
    facts.put(engine.iid(), new EngineFacts.Facts(lease, sideChannel, connector));
  }

  private Future<Buffer> get(HttpClientAgent http, String url) {
    return http.request(new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(url).setTimeout(cfg.engine().healthTimeoutMs()))
        .compose(req -> req.send())
        .compose(resp -> resp.statusCode() == 200 ? resp.body()
            : Future.failedFuture(new IllegalStateException("HTTP " + resp.statusCode())));
  }
}
