package narwhal.engines.client;

import io.netty.channel.ConnectTimeoutException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.engines.connector.DescriptorValidator;
import narwhal.engines.connector.PrefillResult;
import narwhal.engines.json.StreamingJson;

import java.io.IOException;
import java.net.ConnectException;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CancellationException;

/**
 * Runs the two legs of disaggregated execution against vLLM-compatible engines: {@link #prefill} asks a
 * producer for a one-token completion and returns its validated KV handoff; {@link #decode} sends the
 * original request with that handoff to a consumer and streams the output back as classified events.
 * Every failure is an {@link EngineFault} from the one taxonomy. Usable on its own, outside the router.
 */
public final class EngineClient {
  private final Vertx vertx;
  private final EngineClientOptions options;
  private final HttpClientAgent http;

  public EngineClient(Vertx vertx, EngineClientOptions options) {
    this.vertx = vertx;
    this.options = options;
    this.http = vertx.createHttpClient(
        new HttpClientOptions().setConnectTimeout((int) Math.min(Integer.MAX_VALUE, options.connectTimeoutMs()))
            .setKeepAlive(true).setTcpNoDelay(true),
        new PoolOptions().setHttp1MaxSize(options.maxConnectionsPerEngine()));
  }

  /**
   * Runs a prefill leg: a non-streaming one-token request with {@code do_remote_decode}. Succeeds with the
   * producer's validated handoff; fails with an {@link EngineFault} of phase prefill.
   */
  public Future<PrefillResult> prefill(PrefillCall call) {
    return prefill(call, Promise.<Void>promise().future());
  }

  /**
   * As {@link #prefill(PrefillCall)}, abandoned when {@code cancel} completes first: the upstream request is
   * reset and the result fails with a {@link CancellationException}.
   */
  public Future<PrefillResult> prefill(PrefillCall call, Future<?> cancel) {
    return onContext(() -> runPrefill(call, cancel));
  }

  private Future<PrefillResult> runPrefill(PrefillCall call, Future<?> cancel) {
    Instant started = Instant.now();
    long startedNanos = System.nanoTime();
    Buffer body = LegBodies.prefill(call.clientBody(), call.model()).toBuffer();
    Promise<PrefillResult> result = Promise.promise();
    RequestOptions request = post(call.producerUrl(), call.endpoint(), call.requestId(), call.headers());
    cancel.onComplete(v -> {
      // cancel completes when every request ends: build no exception (stack trace and all) for a leg that already has
      if (!result.future().isComplete()) result.tryFail(new CancellationException("prefill leg cancelled"));
    });
    long timer = vertx.setTimer(Math.max(1, call.timeoutMs()), t -> result.tryFail(
        new EngineFault(FaultKind.PREFILL_TIMEOUT, Phase.PREFILL, "prefill did not complete within " + SecondsText.of(call.timeoutMs()) + "s")));
    http.request(request)
        .compose(req -> {
          result.future().onFailure(err -> req.reset());
          return req.send(body);
        })
        .compose(resp -> boundedBody(resp, Phase.PREFILL).map(buf -> toPrefillResult(call, resp, buf, started, startedNanos)))
        .onComplete(ar -> {
          vertx.cancelTimer(timer);
          if (ar.succeeded()) result.tryComplete(ar.result());
          else result.tryFail(classify(ar.cause(), Phase.PREFILL));
        });
    return result.future();
  }

  /**
   * Opens a decode leg for a handoff made by {@link #prefill}. For a crossed decode the handoff's descriptor
   * is sent; for a same-worker decode ({@link DecodeCall#sameWorker()}) no transfer parameters are sent at all.
   * The stream starts at once; attach its handler in the same event-loop turn.
   */
  public DecodeStream decode(PrefillResult handoff, DecodeCall call) {
    JsonObject descriptor = null;
    if (!call.sameWorker()) {
      Optional<String> mismatch = DescriptorValidator.checkEndpoint(handoff, call.endpoint());
      if (mismatch.isPresent()) {
        return DecodeStream.failed(vertx, new EngineFault(FaultKind.INVALID_DESCRIPTOR, Phase.PREFILL,
            "invalid handoff descriptor: " + mismatch.get()));
      }
      descriptor = handoff.parameters();
    }
    Buffer body = LegBodies.decode(call.clientBody(), call.model(), descriptor).toBuffer();
    DecodeStream stream = new DecodeStream(vertx, call, options.maxEventBytes());
    if (Vertx.currentContext() == null) {
      vertx.getOrCreateContext().runOnContext(v -> openDecode(call, body, stream));
    } else {
      openDecode(call, body, stream);
    }
    return stream;
  }

  private void openDecode(DecodeCall call, Buffer body, DecodeStream stream) {
    http.request(post(call.consumerUrl(), call.endpoint(), call.requestId(), call.headers()))
        .compose(req -> {
          stream.attach(req);
          return req.send(body);
        })
        .onSuccess(resp -> {
          if (resp.statusCode() == 200) {
            stream.read(resp);
          } else {
            boundedBody(resp, Phase.DECODE).onComplete(ar -> stream.fail(ar.succeeded()
                ? EngineFault.ofStatus(Phase.DECODE, resp.statusCode(), errorMessage(ar.result()), errorObject(ar.result()))
                : classify(ar.cause(), Phase.DECODE)));
          }
        })
        .onFailure(err -> stream.fail(classify(err, Phase.DECODE)));
  }

  /**
   * vLLM's {@code POST /tokenize} on an engine, bounded by {@code timeoutMs}: its answer
   * ({@code {count, max_model_len, tokens, token_strs}}), or a failure saying why there is none. Asked before a
   * prefill (the router's context check), its silence is the producer's: past the bound it fails with a
   * {@link FaultKind#PREFILL_TIMEOUT} fault of phase prefill, and its connection is reset; when {@code cancel}
   * completes first (the request ended) it is reset too.
   */
  public Future<JsonObject> tokenize(String baseUrl, JsonObject body, String requestId, long timeoutMs, Future<?> cancel) {
    long bound = Math.max(1, timeoutMs);
    return onContext(() -> {
      Promise<JsonObject> result = Promise.promise();
      long timer = vertx.setTimer(bound, t -> result.tryFail(new EngineFault(FaultKind.PREFILL_TIMEOUT, Phase.PREFILL,
          "/tokenize (the context check before prefill) did not answer within " + SecondsText.of(bound) + "s")));
      cancel.onComplete(v -> result.tryFail(new CancellationException("tokenize cancelled")));
      http.request(post(baseUrl, "/tokenize", requestId))
          .compose(req -> {
            result.future().onFailure(err -> req.reset());
            return req.send(InternalFields.forEngine(body).toBuffer());
          })
          .compose(resp -> boundedBody(resp, Phase.PREFILL).map(buf -> {
            if (resp.statusCode() != 200) {
              throw new IllegalStateException("tokenize answered HTTP " + resp.statusCode() + ": " + errorMessage(buf));
            }
            return new JsonObject(buf);
          }))
          .onComplete(ar -> {
            vertx.cancelTimer(timer);
            if (ar.succeeded()) result.tryComplete(ar.result()); else result.tryFail(ar.cause());
          });
      return result.future();
    });
  }

  /**
   * Opens a request an engine runs whole, not disaggregated ({@code /v1/embeddings}, {@code /tokenize},
   * {@code /detokenize}, {@code /v1/responses}): the client's body to {@code endpoint}, as is but for
   * {@link InternalFields}. Succeeds with the
   * engine's answer, paused, once its status and headers arrived within {@code headersTimeoutMs}: a 200, or a 4xx
   * other than 408/429 (the request's own fault, the engine's own error to pass on). Fails with an
   * {@link EngineFault} of phase decode from the one taxonomy otherwise, or when {@code cancel} completes first.
   */
  public Future<HttpClientResponse> whole(String baseUrl, String endpoint, JsonObject body, String requestId, long headersTimeoutMs,
                                          Future<?> cancel) {
    return whole(HttpMethod.POST, baseUrl, endpoint, body, requestId, java.util.Map.of(), headersTimeoutMs, cancel);
  }

  /**
   * As above, with {@code method} ({@code GET} for reading a stored response, its {@code body} null) and the extra
   * {@code headers} the leg must carry (the W3C {@code traceparent}/{@code tracestate} that let the engine's own spans
   * join the request's trace, as the disaggregated legs send them).
   */
  public Future<HttpClientResponse> whole(HttpMethod method, String baseUrl, String endpoint, JsonObject body, String requestId,
                                          java.util.Map<String, String> headers, long headersTimeoutMs, Future<?> cancel) {
    return onContext(() -> {
      Promise<HttpClientResponse> result = Promise.promise();
      cancel.onComplete(v -> {
        if (!result.future().isComplete()) result.tryFail(new CancellationException("whole request cancelled"));
      });
      long timer = vertx.setTimer(Math.max(1, headersTimeoutMs), t -> result.tryFail(new EngineFault(FaultKind.FIRST_TOKEN_TIMEOUT,
          Phase.DECODE, "no answer within " + SecondsText.of(headersTimeoutMs) + "s")));
      RequestOptions options = post(baseUrl, endpoint, requestId, headers).setMethod(method);
      Buffer sent = body == null ? null : InternalFields.forEngine(body).toBuffer();
      if (body == null) options.removeHeader("content-type");
      http.request(options)
          .compose(req -> {
            result.future().onFailure(err -> req.reset());
            return body == null ? req.send() : req.send(sent);
          })
          .compose(resp -> {
            FaultKind kind = resp.statusCode() == 200 ? null : FaultKind.ofEngineStatus(resp.statusCode());
            if (kind == null || kind == FaultKind.ENGINE_REJECTED) {
              resp.pause();
              return Future.succeededFuture(resp);
            }
            return boundedBody(resp, Phase.DECODE).compose(buf -> Future.<HttpClientResponse>failedFuture(
                EngineFault.ofStatus(Phase.DECODE, resp.statusCode(), errorMessage(buf), errorObject(buf))));
          })
          .onComplete(ar -> {
            vertx.cancelTimer(timer);
            if (ar.succeeded()) {
              if (!result.tryComplete(ar.result())) ar.result().request().reset();
            } else {
              result.tryFail(classify(ar.cause(), Phase.DECODE));
            }
          });
      return result.future();
    });
  }

  public Future<Void> close() {
    return http.close();
  }

  /**
   * Runs a leg on a Vert.x context. Called from a plain thread, response handlers could otherwise be attached
   * after the engine's bytes arrived (seen with Vert.x 5: a body that never completes).
   */
  private <T> Future<T> onContext(java.util.function.Supplier<Future<T>> leg) {
    if (Vertx.currentContext() != null) return leg.get();
    Promise<T> promise = Promise.promise();
    vertx.getOrCreateContext().runOnContext(v -> leg.get().onComplete(promise));
    return promise.future();
  }

  private RequestOptions post(String baseUrl, String endpoint, String requestId) {
    return post(baseUrl, endpoint, requestId, java.util.Map.of());
  }

  private RequestOptions post(String baseUrl, String endpoint, String requestId, java.util.Map<String, String> headers) {
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(join(baseUrl, endpoint))
        .putHeader("content-type", "application/json").putHeader("x-request-id", requestId);
    headers.forEach(options::putHeader);
    String key = this.options.apiKey().get();
    if (!key.isEmpty()) options.putHeader("authorization", "Bearer " + key);
    return options;
  }

  private PrefillResult toPrefillResult(PrefillCall call, HttpClientResponse resp, Buffer buf, Instant started, long startedNanos) {
    long completedNanos = System.nanoTime();
    if (resp.statusCode() != 200) throw EngineFault.ofStatus(Phase.PREFILL, resp.statusCode(), errorMessage(buf), errorObject(buf));
    Object descriptor;
    Object usage;
    try {
      byte[] bytes = buf.getBytes();
      descriptor = StreamingJson.field(bytes, "kv_transfer_params");
      usage = StreamingJson.field(bytes, "usage");
    } catch (IOException e) {
      throw new EngineFault(FaultKind.BAD_RESPONSE, Phase.PREFILL, "prefill response is not a JSON object");
    }
    DescriptorValidator.check(descriptor, call.expectations()).ifPresent(reason -> {
      EngineFault refused = new EngineFault(FaultKind.INVALID_DESCRIPTOR, Phase.PREFILL, "invalid handoff descriptor: " + reason);
      throw namesBlocks(descriptor) ? refused.leavingKvHeld() : refused;
    });
    return new PrefillResult((JsonObject) descriptor, call.producerUrl(), call.endpoint(), call.requestId(),
        started, startedNanos, completedNanos, LegBodies.promptLogprobsAsked(call.clientBody()) ? promptLogprobs(buf) : null,
        cachedTokens(usage));
  }

  /**
   * {@code usage.prompt_tokens_details.cached_tokens} of an answer, or null, also for what is not a count of tokens
   * (negative, fractional, beyond an int): a broken engine's figure never reaches the journal or a counter.
   */
  static Integer cachedTokens(Object usage) {
    if (!(usage instanceof JsonObject u && u.getValue("prompt_tokens_details") instanceof JsonObject details
        && details.getValue("cached_tokens") instanceof Number n)) return null;
    double v = n.doubleValue();
    return v >= 0 && v <= Integer.MAX_VALUE && v == Math.rint(v) ? n.intValue() : null;
  }

  /** Whether a descriptor names KV blocks ({@code remote_block_ids} not empty): the producer holds them for a consumer. */
  private static boolean namesBlocks(Object descriptor) {
    if (!(descriptor instanceof JsonObject d)) return false;
    Object ids = d.getValue("remote_block_ids");
    return ids instanceof io.vertx.core.json.JsonArray list ? !list.isEmpty() : ids != null;
  }

  /** A prefill answer's {@code prompt_logprobs}: top-level in a chat answer, in the first choice of a completion. */
  private static io.vertx.core.json.JsonArray promptLogprobs(Buffer buf) {
    try {
      JsonObject answer = new JsonObject(buf);
      if (answer.getValue("prompt_logprobs") instanceof io.vertx.core.json.JsonArray top) return top;
      if (answer.getValue("choices") instanceof io.vertx.core.json.JsonArray choices && !choices.isEmpty()
          && choices.getValue(0) instanceof JsonObject choice
          && choice.getValue("prompt_logprobs") instanceof io.vertx.core.json.JsonArray inChoice) {
        return inChoice;
      }
    } catch (RuntimeException notJson) {
      // the descriptor read above already accepted the body; no logprobs to keep
    }
    return null;
  }

  private Future<Buffer> boundedBody(HttpClientResponse resp, Phase phase) {
    String length = resp.getHeader("content-length");
    if (length != null) {
      try {
        if (Long.parseLong(length.trim()) > options.maxResponseBytes()) return Future.failedFuture(tooLarge(phase));
      } catch (NumberFormatException ignored) {
        // a malformed length is the transport's problem; the body read decides
      }
    }
    Promise<Buffer> body = Promise.promise();
    Buffer acc = Buffer.buffer();
    resp.handler(chunk -> {
      if (acc.length() + chunk.length() > options.maxResponseBytes()) {
        body.tryFail(tooLarge(phase));
        resp.request().reset();
      } else {
        acc.appendBuffer(chunk);
      }
    });
    resp.exceptionHandler(body::tryFail);
    resp.endHandler(v -> body.tryComplete(acc));
    return body.future();
  }

  private EngineFault tooLarge(Phase phase) {
    return new EngineFault(FaultKind.RESPONSE_TOO_LARGE, phase, "engine response larger than " + options.maxResponseBytes() + " bytes");
  }

  /** Maps a transport failure to the taxonomy; faults already classified pass through. */
  static EngineFault classify(Throwable err, Phase phase) {
    if (err instanceof EngineFault fault) return fault;
    if (outOfDescriptors(err)) {
      return new EngineFault(FaultKind.LOCAL_RESOURCES, phase, "router out of file descriptors; the engine was not reached");
    }
    if (err instanceof ConnectTimeoutException) {
      return new EngineFault(FaultKind.CONNECT_TIMEOUT, phase, "could not connect to the engine in time");
    }
    if (err instanceof ConnectException) {
      return new EngineFault(FaultKind.CONNECT_ERROR, phase, "could not connect to the engine");
    }
    return new EngineFault(FaultKind.CONNECTION_RESET, phase, "engine connection failed before a complete response");
  }

  /** EMFILE/ENFILE anywhere in the cause chain: the router's own limit, not the engine's fault. */
  private static boolean outOfDescriptors(Throwable err) {
    for (Throwable t = err; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && (m.contains("Too many open files") || m.contains("EMFILE") || m.contains("ENFILE"))) return true;
    }
    return false;
  }

  /**
   * The engine's own error message, from vLLM's nested or legacy flat error shape, or its authentication
   * middleware's {@code {"error": "Unauthorized"}}; empty when the body carries none.
   */
  public static String errorMessage(Buffer body) {
    try {
      JsonObject json = new JsonObject(body);
      if (json.getValue("error") instanceof JsonObject err && err.getValue("message") instanceof String m) return m;
      if (json.getValue("error") instanceof String m) return m;
      if (json.getValue("message") instanceof String m) return m;
      if (json.getValue("detail") instanceof String m) return m;
    } catch (RuntimeException notJson) {
      // an error body that is not JSON carries no message we can trust
    }
    return "";
  }

  /** The engine's error object: vLLM's nested {@code error} or its older flat shape; null when the body has neither. */
  public static JsonObject errorObject(Buffer body) {
    try {
      JsonObject json = new JsonObject(body);
      if (json.getValue("error") instanceof JsonObject err) return err;
      if ("error".equals(json.getValue("object"))) return json;
    } catch (RuntimeException notJson) {
      // no object to keep
    }
    return null;
  }

  static String join(String baseUrl, String endpoint) {
    return baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) + endpoint : baseUrl + endpoint;
  }
}
