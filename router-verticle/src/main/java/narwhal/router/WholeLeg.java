package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Reservation;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.engines.client.DecodeEnd;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one leg of a request an engine runs whole (docs/operations.md#endpoints-an-engine-runs-whole), and the client's end
 * of it; its {@link RequestLifecycle} owns the rest (reservation, deadline, retries, ending, journal row). The body goes
 * as the client sent it to one decode-capable engine of its model, or to the engine that answered its
 * {@code previous_response_id} ({@link #pin}); the engine's answer comes back as is: a stream relayed chunk by chunk
 * (committed with the first, its silences bounded by {@code engine.first_token_timeout_s} and
 * {@code engine.decode_read_timeout_s}), any other answer read whole within {@code serving.max_response_bytes}. A
 * {@code /v1/responses} answer's id is recorded with its engine before the client gets its last byte. Confined to the
 * client connection's event loop.
 */
final class WholeLeg implements ClientEnd {
  /** Where a {@code /v1/responses} answer names its id: the object's first {@code id}, or the stream's first event's. */
  private static final Pattern RESPONSE_ID = Pattern.compile("\"id\"\\s*:\\s*\"(resp[^\"]*)\"");
  private static final int ID_SCAN_BYTES = 8192;
  /** The events that end a {@code /v1/responses} stream (vLLM's {@code event:} lines); a stream that ends without one was cut. */
  private static final Pattern RESPONSE_END = Pattern.compile("event: (response\\.completed|response\\.incomplete|response\\.failed|error)\\n");
  private static final int END_SCAN_TAIL = 64;
  /** The usage object of a {@code /v1/responses} stream's ending event (vLLM writes it after the output). */
  private static final Pattern USAGE_KEY = Pattern.compile("\"usage\"\\s*:\\s*\\{");
  /** The last characters of the ending event kept for its usage: the fields vLLM writes after it are short. */
  private static final int USAGE_TAIL = 4096;

  /**
   * The engine answered the request's own fault (a 4xx, passed to the client as is): evidence for nothing, not retried.
   * {@code modelMissing}: vLLM's 404 for a model it does not serve; {@code type}: the engine's error type, for the
   * journal ({@code invalid_request_error} when its answer carried none).
   */
  static final class EngineRefused extends RuntimeException {
    final int status;
    final boolean modelMissing;
    final String type;

    EngineRefused(int status, boolean modelMissing, String type) {
      super("engine answered HTTP " + status, null, false, false);
      this.status = status;
      this.modelMissing = modelMissing;
      this.type = type;
    }
  }

  /**
   * What the leg asks its engine: {@code method} on {@code path} (with the client's query), with the client's body
   * or none ({@code GET /v1/responses/{id}}, {@code POST /v1/responses/{id}/cancel}).
   */
  record Target(HttpMethod method, String path, boolean sendsBody) {
    static Target post(String endpoint) {
      return new Target(HttpMethod.POST, endpoint, true);
    }
  }

  private final RouterContext ctx;
  private final ResponseOwners owners;
  private final InferenceRequest request;
  private final String previousId;
  private final Target target;
  private final HttpServerResponse client;
  /** The engine that answered {@link #previousId}, null when the request names none. */
  private String pinned;
  /** The engine of {@link #previousId} when the edge already looked it up, else null. */
  private final String knownOwner;
  private boolean committed;
  private boolean cancelled;
  private long outputBytes;
  private Buffer head = Buffer.buffer();
  private String responseId;
  /** Completes once the engine of {@link #responseId} is recorded for follow-ups: the client's answer ends after it. */
  private Future<Void> ownerRecorded = Future.succeededFuture();
  /** The engine's answer being relayed, null before and after. */
  private HttpClientResponse open;
  private long readTimer = -1;
  /** The last bytes of a {@code /v1/responses} stream, where its ending event is looked for; null once seen, or for another stream. */
  private String streamTail;
  /** The last {@link #USAGE_TAIL} characters of a {@code /v1/responses} stream from its ending event on, null before it. */
  private StringBuilder endEvent;

  WholeLeg(RouterContext ctx, ResponseOwners owners, InferenceRequest request, String previousId) {
    this(ctx, owners, request, previousId, Target.post(request.endpoint()), null);
  }

  /**
   * A leg about stored response {@code responseId}, which engine {@code owner} answered: {@code target} goes there
   * alone, and gets vLLM's 404 when that engine cannot be placed.
   */
  WholeLeg(RouterContext ctx, ResponseOwners owners, InferenceRequest request, String responseId, Target target, String owner) {
    this.ctx = ctx;
    this.owners = owners;
    this.request = request;
    this.previousId = responseId;
    this.target = target;
    this.knownOwner = owner;
    this.client = request.response();
  }

  /** Sends the leg to engine {@code consumer} with the trace-context {@code headers} of its span. */
  Future<HttpClientResponse> send(Reservation consumer, String requestId, Map<String, String> headers, long headersTimeoutMs,
                                  Future<?> cancel) {
    return ctx.engines().whole(target.method(), consumer.url(), target.path(), target.sendsBody() ? request.body() : null,
        requestId, headers, headersTimeoutMs, cancel);
  }

  /**
   * Before the first attempt: finds the engine that answered {@code previous_response_id}; a refusal (vLLM's own 404)
   * when no engine of the fleet is known to have.
   */
  Future<Optional<EdgeError>> pin() {
    if (previousId == null) return Future.succeededFuture(Optional.empty());
    if (knownOwner != null) {
      pinned = knownOwner;
      return Future.succeededFuture(Optional.empty());
    }
    return owners.owner(ctx.vertx(), previousId).map(iid -> {
      pinned = iid;
      return iid == null ? Optional.of(EdgeError.responseNotFound(previousId)) : Optional.empty();
    });
  }

  /** A follow-up's state lives on its engine alone: it is never retried elsewhere. */
  int maxAttempts(int configured) {
    return pinned != null ? 1 : configured;
  }

  /** The engines a reservation must not take: {@code excluded}, and for a follow-up every engine but its own. */
  List<String> exclude(List<String> excluded, NarwhalConfig cfg) {
    if (pinned == null) return excluded;
    for (EngineConfig e : cfg.engines()) if (!e.iid().equals(pinned)) excluded.add(e.iid());
    return excluded;
  }

  /**
   * A follow-up's engine refused the connection (nothing listens at its address: the process that held the response's
   * state is gone, even before the breaker ejects it): vLLM's 404, as for an engine already out of service.
   */
  Optional<EdgeError> ownerRefused(EngineFault fault) {
    return pinned == null || committed || fault.kind() != FaultKind.CONNECT_ERROR ? Optional.empty()
        : Optional.of(EdgeError.responseNotFound(previousId));
  }

  /** No engine could be placed for a follow-up before any was sent: its engine is gone, vLLM's 404 says so. */
  Optional<EdgeError> ownerGone() {
    return pinned == null ? Optional.empty() : Optional.of(EdgeError.responseNotFound(previousId));
  }

  /**
   * Relays {@code resp}, the answer of engine {@code iid}; {@code firstByte} runs when the client gets its first byte.
   * Completes with the usage of a 200 (a response's {@code input_tokens}/{@code output_tokens} as prompt/completion,
   * a stream's from its ending event);
   * fails with {@link EngineRefused} for a 4xx passed on, or with the {@link EngineFault} that broke the answer.
   */
  Future<DecodeEnd> relay(HttpClientResponse resp, String iid, Runnable firstByte) {
    if (cancelled) {
      resp.request().reset();
      return Future.failedFuture(new java.util.concurrent.CancellationException());
    }
    open = resp;
    String type = resp.getHeader("content-type");
    boolean stream = resp.statusCode() == 200 && type != null && type.startsWith("text/event-stream");
    Promise<Void> end = Promise.promise();
    long maxBytes = ctx.config().get().serving().maxResponseBytes();
    Buffer whole = Buffer.buffer();
    streamTail = stream && request.endpoint().startsWith("/v1/responses") ? "" : null;
    resp.handler(chunk -> {
      if (cancelled) return;
      if (stream) {
        if (!committed) {
          committed = true;
          firstByte.run();
          client.setStatusCode(200).setChunked(true).putHeader("content-type", type).putHeader("cache-control", "no-cache");
        }
        scan(chunk, iid);
        watchEnd(chunk);
        outputBytes += chunk.length();
        client.write(chunk);
        if (client.writeQueueFull()) {
          resp.pause();
          client.drainHandler(v -> resp.resume());
        }
        armReadTimer(end);
      } else if (whole.length() + chunk.length() > maxBytes) {
        end.tryFail(new EngineFault(FaultKind.ANSWER_TOO_LARGE, Phase.DECODE, "the engine's answer is larger than " + maxBytes
            + " bytes (serving.max_response_bytes): ask for less in one request"));
        resp.request().reset();
      } else {
        whole.appendBuffer(chunk);
      }
    });
    resp.exceptionHandler(err -> end.tryFail(err instanceof EngineFault ? err : new EngineFault(FaultKind.CONNECTION_RESET,
        Phase.DECODE, "engine connection failed before a complete response")));
    resp.endHandler(v -> {
      if (streamTail != null) {
        end.tryFail(new EngineFault(FaultKind.EOF_BEFORE_DONE, Phase.DECODE, "stream ended before its response.completed event"));
      } else {
        end.tryComplete();
      }
    });
    if (stream) armReadTimer(end);
    resp.resume();
    return end.future().onComplete(ar -> {
      cancelReadTimer();
      open = null;
    }).compose(v -> stream ? Future.succeededFuture(new DecodeEnd(null, target.sendsBody() ? streamUsage() : null, 0))
        : answer(resp, whole, iid, firstByte));
  }

  /**
   * The usage of a {@code /v1/responses} stream, read once from its ending event's {@code response.usage}
   * ({@code input_tokens}, {@code output_tokens}, {@code input_tokens_details.cached_tokens}); null when it has none.
   * A quote inside a JSON string is escaped: the last usage key of the event's tail is the response's.
   */
  private JsonObject streamUsage() {
    if (endEvent == null) return null;
    String text = endEvent.toString();
    Matcher m = USAGE_KEY.matcher(text);
    int start = -1;
    while (m.find()) start = m.end() - 1;
    if (start < 0) return null;
    int depth = 0;
    boolean quoted = false;
    for (int i = start; i < text.length(); i++) {
      char c = text.charAt(i);
      if (quoted) {
        if (c == '\\') i++;
        else if (c == '"') quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '{') {
        depth++;
      } else if (c == '}' && --depth == 0) {
        try {
          return usage(new JsonObject(text.substring(start, i + 1)));
        } catch (RuntimeException notJson) {
          return null;
        }
      }
    }
    return null;
  }

  /** A whole answer to the client, as the engine sent it. */
  private Future<DecodeEnd> answer(HttpClientResponse resp, Buffer body, String iid, Runnable firstByte) {
    committed = true;
    firstByte.run();
    outputBytes = body.length();
    JsonObject json = null;
    try {
      json = new JsonObject(body);
    } catch (RuntimeException notJson) {
      // the answer goes to the client as the engine sent it
    }
    if (resp.statusCode() == 200) scan(body, iid);
    String type = resp.getHeader("content-type");
    client.setStatusCode(resp.statusCode()).putHeader("content-type", type == null ? "application/json" : type);
    Buffer sent = resp.statusCode() == 200 ? body : refusal(resp.statusCode(), body, json);
    ownerRecorded.onComplete(x -> client.end(sent));
    if (resp.statusCode() != 200) {
      return Future.failedFuture(new EngineRefused(resp.statusCode(), modelMissing(resp.statusCode(), json), errorType(json)));
    }
    boolean generated = target.sendsBody();
    return Future.succeededFuture(new DecodeEnd(null, generated && json != null && json.getValue("usage") instanceof JsonObject u
        ? usage(u) : null, 0));
  }

  /**
   * The engine's 4xx as the client gets it: as sent, but for its message, which becomes a client's error where every
   * engine's does ({@link EdgeError#ofEngine}): without the fleet's engine addresses.
   */
  private Buffer refusal(int status, Buffer body, JsonObject json) {
    List<EngineConfig> engines = ctx.config().get().engines();
    JsonObject error = json == null ? null : json.getValue("error") instanceof JsonObject e ? e : json;
    if (error == null || !(error.getValue("message") instanceof String message)) {
      String text = body.toString(StandardCharsets.UTF_8);
      String redacted = EdgeError.redacted(text, engines);
      return redacted.equals(text) ? body : Buffer.buffer(redacted);
    }
    EdgeError passed = EdgeError.ofEngine(status, errorType(json), message, error.getValue("param") instanceof String p ? p : null,
        error.getValue("code"), FaultKind.ENGINE_REJECTED.reason(), engines);
    if (passed.message().equals(message)) return body;
    JsonObject out = json.copy();
    (out.getValue("error") instanceof JsonObject e ? e : out).put("message", passed.message());
    return out.toBuffer();
  }

  /** vLLM's 404 for a model it does not serve, classified as every engine answer is ({@link EngineFault#ofStatus}). */
  private static boolean modelMissing(int status, JsonObject body) {
    if (status != 404 || body == null) return false;
    Object message = body.getValue("error") instanceof JsonObject error ? error.getValue("message") : body.getValue("message");
    return message instanceof String text && EngineFault.ofStatus(Phase.DECODE, status, text).kind() == FaultKind.ENGINE_MODEL_MISSING;
  }

  /** The type of the engine's error object (vLLM's nested shape or its flat one), else {@code invalid_request_error}. */
  private static String errorType(JsonObject body) {
    JsonObject error = body == null ? null : body.getValue("error") instanceof JsonObject e ? e : body;
    return error != null && error.getValue("type") instanceof String type && !type.isEmpty() ? type : "invalid_request_error";
  }

  private static JsonObject usage(JsonObject usage) {
    if (!usage.containsKey("input_tokens")) return usage;
    JsonObject mapped = new JsonObject().put("prompt_tokens", usage.getValue("input_tokens"))
        .put("completion_tokens", usage.getValue("output_tokens"));
    if (usage.getValue("input_tokens_details") instanceof JsonObject details) mapped.put("prompt_tokens_details", details);
    return mapped;
  }

  /**
   * Finds a {@code /v1/responses} answer's id in its first bytes and records its engine at once: a client may send the
   * follow-up the moment its answer ends, through any replica.
   */
  private void scan(Buffer chunk, String iid) {
    if (responseId != null || !"/v1/responses".equals(request.endpoint()) || head.length() >= ID_SCAN_BYTES) return;
    head.appendBuffer(chunk, 0, Math.min(chunk.length(), ID_SCAN_BYTES - head.length()));
    Matcher m = RESPONSE_ID.matcher(head.toString(StandardCharsets.UTF_8));
    if (m.find()) {
      responseId = m.group(1);
      head = null;
      ownerRecorded = owners.answered(ctx.vertx(), responseId, iid);
    }
  }

  /** Looks for the event that ends a {@code /v1/responses} stream in what arrived, across chunk boundaries. */
  private void watchEnd(Buffer chunk) {
    if (endEvent != null) {
      endEvent.append(chunk.toString(StandardCharsets.UTF_8));
      if (endEvent.length() > USAGE_TAIL) endEvent.delete(0, endEvent.length() - USAGE_TAIL);
      return;
    }
    if (streamTail == null) return;
    String text = streamTail + chunk.toString(StandardCharsets.UTF_8);
    Matcher end = RESPONSE_END.matcher(text);
    if (end.find()) {
      streamTail = null;
      endEvent = new StringBuilder(text.substring(end.start()));
      if (endEvent.length() > USAGE_TAIL) endEvent.delete(0, endEvent.length() - USAGE_TAIL);
    } else {
      streamTail = text.substring(Math.max(0, text.length() - END_SCAN_TAIL));
    }
  }

  private void armReadTimer(Promise<Void> end) {
    cancelReadTimer();
    NarwhalConfig cfg = ctx.config().get();
    long silenceMs = committed ? cfg.engine().decodeReadTimeoutMs() : cfg.engine().firstTokenTimeoutMs();
    if (silenceMs <= 0) return;
    readTimer = ctx.vertx().setTimer(silenceMs, t -> end.tryFail(committed
        ? new EngineFault(FaultKind.DECODE_SILENCE, Phase.DECODE, "engine went silent: nothing arrived within the "
            + silenceMs / 1000.0 + "s read timeout")
        : new EngineFault(FaultKind.FIRST_TOKEN_TIMEOUT, Phase.DECODE, "no output within " + silenceMs / 1000.0 + "s")));
  }

  private void cancelReadTimer() {
    if (readTimer >= 0) ctx.vertx().cancelTimer(readTimer);
    readTimer = -1;
  }

  /** The request ended: an answer still being relayed is dropped and its engine connection reset. */
  void cancel() {
    cancelled = true;
    cancelReadTimer();
    if (open != null) open.request().reset();
    open = null;
  }

  @Override
  public void complete(DecodeEnd end) {
    if (committed && client.headWritten() && !client.ended()) ownerRecorded.onComplete(x -> {
      if (!client.ended() && !client.closed()) client.end();
    });
  }

  @Override
  public void fail(EdgeError error) {
    if (!committed) {
      error.send(client);
    } else if (client.headWritten() && !client.ended() && !client.closed()) {
      client.end(SseRelay.terminalEvent(error));
    }
  }

  @Override
  public boolean committed() {
    return committed;
  }

  @Override
  public long outputLength() {
    return outputBytes;
  }
}
