package narwhal.engines.checks;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.DecodeCall;
import narwhal.engines.client.EngineClient;
import narwhal.engines.client.EngineClientOptions;
import narwhal.engines.client.PrefillCall;
import narwhal.engines.connector.EngineContract;
import narwhal.engines.connector.HandoffExpectations;

import java.util.UUID;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The one way to talk to an engine outside a client request, shared by the router's preflight and the breaker's
 * probes: bounded JSON checks (health, models, attestation, a direct generation) through Vert.x Web Client, and the
 * two-leg KV transfer probe through {@link EngineClient}. Built from the configuration: every request carries the
 * engines' API key ({@code engine.engine_api_key_env}, read once here), every bound comes from {@code engine.*}.
 * A failed check fails its future with a {@link CheckFailure} that says why.
 */
public final class EngineChecks {
  private static final int PROBE_CONNECTIONS_PER_ENGINE = 8;

  private final Vertx vertx;
  private final Supplier<NarwhalConfig> config;
  private final Supplier<String> apiKey;
  private final WebClient web;
  private final EngineClient legs;

  /** @param env reads environment variables (the engines' API key); tests pass their own */
  public EngineChecks(Vertx vertx, Supplier<NarwhalConfig> config, UnaryOperator<String> env) {
    this.vertx = vertx;
    this.config = config;
    NarwhalConfig cfg = config.get();
    this.apiKey = () -> config.get().engine().engineApiKey(env);
    int connectMs = (int) Math.min(Integer.MAX_VALUE, cfg.engine().connectTimeoutMs());
    this.web = WebClient.create(vertx, new WebClientOptions().setConnectTimeout(connectMs).setFollowRedirects(false)
        .setUserAgent("narwhal-checks"));
    this.legs = new EngineClient(vertx, new EngineClientOptions(cfg.engine().connectTimeoutMs(), PROBE_CONNECTIONS_PER_ENGINE,
        cfg.serving().maxResponseBytes(), EngineClientOptions.DEFAULT_MAX_EVENT_BYTES, apiKey));
  }

  /** {@code GET /health} answers 200. */
  public Future<Void> health(EngineConfig engine) {
    return get("health", join(engine.url(), "/health")).mapEmpty();
  }

  /** {@code GET /v1/models} lists the engine's own model ({@code engines[].model}). */
  public Future<Void> modelListed(EngineConfig engine) {
    return modelCard(engine).mapEmpty();
  }

  /**
   * The engine's model's card from {@code GET /v1/models} (vLLM's carries {@code max_model_len}); fails as
   * {@link #modelListed} does when the model is not listed.
   */
  public Future<JsonObject> modelCard(EngineConfig engine) {
    String model = modelOf(engine);
    return get("models", join(engine.url(), "/v1/models")).compose(resp -> {
      JsonArray data = json("models", resp).getValue("data") instanceof JsonArray a ? a : new JsonArray();
      return data.stream().filter(m -> m instanceof JsonObject o && model.equals(o.getValue("id"))).map(JsonObject.class::cast)
          .findFirst().map(Future::succeededFuture)
          .orElseGet(() -> Future.failedFuture(new CheckFailure("models", "model " + model + " not listed (the engine lists "
              + data.stream().map(m -> m instanceof JsonObject o ? String.valueOf(o.getValue("id")) : "?").toList() + ")")));
    });
  }

  /** vLLM's {@code POST /tokenize} with {@code body}: {@code {count, max_model_len, tokens, token_strs}}. */
  public Future<JsonObject> tokenize(EngineConfig engine, JsonObject body) {
    long bound = config.get().engine().healthTimeoutMs();
    return call("tokenize", bound, () -> keyed(web.postAbs(join(engine.url(), "/tokenize"))).timeout(bound).sendJsonObject(body))
        .map(resp -> json("tokenize", resp));
  }

  /** The engine's attestation ({@code attestation_url}, else its {@code /attestation}). */
  public Future<EngineAttestation> attestation(EngineConfig engine) {
    return get("attestation", engine.attestationUrlOrDefault()).map(resp -> EngineAttestation.of(engine, json("attestation", resp)));
  }

  /**
   * The attestation, checked against the pinned {@code engine_contract} (always passes when none is pinned); a pinned
   * {@code model} is checked against the engine's own model.
   */
  public Future<EngineAttestation> contract(EngineConfig engine) {
    JsonObject contract = EngineContract.forModel(config.get().engineContract(), modelOf(engine));
    return attestation(engine).compose(attested -> {
      String mismatch = attested.mismatch(contract);
      return mismatch == null ? Future.succeededFuture(attested) : Future.failedFuture(new CheckFailure("contract", mismatch));
    });
  }

  /**
   * A direct generation: a one-token, non-streaming completion on a unique prompt, bounded by
   * {@code engine.first_token_timeout_s}; passes on 200 with a choice.
   */
  public Future<Void> generation(EngineConfig engine) {
    NarwhalConfig cfg = config.get();
    String rid = "probe-" + UUID.randomUUID() + "-generation";
    JsonObject body = new JsonObject().put("model", modelOf(engine)).put("prompt", "narwhal probe " + rid)
        .put("max_tokens", 1).put("stream", false);
    long bound = cfg.engine().firstTokenTimeoutMs();
    return call("generation", bound, () -> keyed(web.postAbs(join(engine.url(), "/v1/completions")))
        .putHeader("x-request-id", rid).timeout(bound).sendJsonObject(body))
        .compose(resp -> json("generation", resp).getValue("choices") instanceof JsonArray choices && !choices.isEmpty()
            ? Future.<Void>succeededFuture()
            : Future.failedFuture(new CheckFailure("generation", "the answer carries no choice")));
  }

  /** What a handoff from {@code producer} must agree with, given what it attested (null: nothing known). */
  public HandoffExpectations expectations(EngineAttestation producer) {
    String connector = config.get().engine().connector();
    if (producer == null) return new HandoffExpectations(HandoffExpectations.DEFAULT_TRANSFER_MODE, connector, connector, null);
    return new HandoffExpectations(HandoffExpectations.DEFAULT_TRANSFER_MODE,
        producer.connector() != null ? producer.connector() : connector, connector, producer.sideChannel());
  }

  /**
   * A KV transfer probe on a unique prompt: a one-token prefill on {@code producer} whose handoff must be valid, then
   * a streamed decode of it on {@code consumer} (none when null: the handoff alone is checked). Backend request ids
   * start with {@code purpose}. Fails with step {@code prefill} or {@code decode}.
   */
  public Future<Void> transfer(EngineConfig producer, EngineConfig consumer, HandoffExpectations expected,
                               ProbeBounds bounds, String purpose) {
    NarwhalConfig cfg = config.get();
    String rid = purpose + "-" + UUID.randomUUID();
    JsonObject body = new JsonObject().put("prompt", "narwhal " + purpose + " " + rid).put("max_tokens", bounds.tokens());
    long readMs = bounds.readMs() > 0 ? bounds.readMs() : bounds.firstTokenMs();
    String model = modelOf(producer);
    return onContext(() -> legs.prefill(new PrefillCall(producer.url(), "/v1/completions", body, model, rid + "-prefill",
            bounds.prefillMs(), expected))
        .recover(err -> Future.failedFuture(CheckFailure.of("prefill", err, bounds.prefillMs())))
        .compose(handoff -> consumer == null ? Future.<Void>succeededFuture()
            : legs.decode(handoff, new DecodeCall(consumer.url(), "/v1/completions", body, model, rid + "-decode",
                    consumer.iid().equals(producer.iid()), bounds.firstTokenMs(), readMs)).end()
                .<Void>mapEmpty()
                .recover(err -> Future.failedFuture(CheckFailure.of("decode", err, bounds.firstTokenMs())))));
  }

  /** The model an engine serves: its own {@code model}, else the fleet's. */
  public String modelOf(EngineConfig engine) {
    return engine.model().isEmpty() ? config.get().model() : engine.model();
  }

  public Future<Void> close() {
    web.close();
    return legs.close();
  }

  private Future<HttpResponse<Buffer>> get(String step, String url) {
    long bound = config.get().engine().healthTimeoutMs();
    return call(step, bound, () -> keyed(web.getAbs(url)).timeout(bound).send());
  }

  /** Sends on a Vert.x context, bounds the whole exchange, and turns anything but a 200 into a check failure. */
  private Future<HttpResponse<Buffer>> call(String step, long boundMs, Supplier<Future<HttpResponse<Buffer>>> send) {
    return onContext(() -> send.get().timeout(boundMs, java.util.concurrent.TimeUnit.MILLISECONDS))
        .recover(err -> Future.failedFuture(CheckFailure.of(step, err, boundMs)))
        .compose(resp -> resp.statusCode() == 200 ? Future.succeededFuture(resp)
            : Future.failedFuture(new CheckFailure(step, status(resp))));
  }

  private HttpRequest<Buffer> keyed(HttpRequest<Buffer> request) {
    String key = apiKey.get();
    return key.isEmpty() ? request : request.bearerTokenAuthentication(key);
  }

  /** "HTTP 401: Unauthorized": the status and the engine's own message when it gave one. */
  private static String status(HttpResponse<Buffer> resp) {
    Buffer body = resp.body();
    String message = body == null ? "" : EngineClient.errorMessage(body);
    return "engine answered HTTP " + resp.statusCode() + (message.isEmpty() ? "" : ": " + message);
  }

  private static JsonObject json(String step, HttpResponse<Buffer> resp) {
    try {
      Buffer body = resp.body();
      if (body != null && io.vertx.core.json.Json.decodeValue(body) instanceof JsonObject o) return o;
    } catch (RuntimeException notJson) {
      // reported below
    }
    throw new CheckFailure(step, "the answer is not a JSON object");
  }

  private <T> Future<T> onContext(Supplier<Future<T>> work) {
    if (Vertx.currentContext() != null) return work.get();
    Promise<T> promise = Promise.promise();
    vertx.getOrCreateContext().runOnContext(v -> work.get().onComplete(promise));
    return promise.future();
  }

  private static String join(String baseUrl, String path) {
    return baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) + path : baseUrl + path;
  }
}
