package narwhal.router.telemetry;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.connector.PrefillResult;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.function.Function;

/**
 * The span tree of one traced request: the request span (the client's {@code traceparent} its parent), under it one
 * span per attempt, and under each attempt its placements, the prefill leg, the descriptor validation, the decode
 * leg (with a {@code first_token} event) and the relay; for a request an engine runs whole, its one leg is the decode
 * span. Span names and attributes: docs/operations.md#tracing.
 */
final class RecordingTrace extends RequestTrace {
  static final String ATTEMPT = "narwhal.attempt";
  static final String PLACEMENT = "narwhal.placement";
  static final String PREFILL = "narwhal.prefill";
  static final String VALIDATION = "narwhal.descriptor_validation";
  static final String DECODE = "narwhal.decode";
  static final String RELAY = "narwhal.relay";
  static final String FIRST_TOKEN = "first_token";

  static final AttributeKey<String> OPERATION = AttributeKey.stringKey("gen_ai.operation.name");
  static final AttributeKey<String> REQUEST_MODEL = AttributeKey.stringKey("gen_ai.request.model");
  static final AttributeKey<Long> MAX_TOKENS = AttributeKey.longKey("gen_ai.request.max_tokens");
  static final AttributeKey<Long> INPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.input_tokens");
  static final AttributeKey<Long> OUTPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.output_tokens");
  static final AttributeKey<Long> CACHED_TOKENS = AttributeKey.longKey("gen_ai.usage.cache_read.input_tokens");
  static final AttributeKey<List<String>> FINISH_REASONS = AttributeKey.stringArrayKey("gen_ai.response.finish_reasons");
  static final AttributeKey<String> METHOD = AttributeKey.stringKey("http.request.method");
  static final AttributeKey<String> PATH = AttributeKey.stringKey("url.path");
  static final AttributeKey<Long> STATUS = AttributeKey.longKey("http.response.status_code");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
  static final AttributeKey<String> RID = AttributeKey.stringKey("narwhal.rid");
  static final AttributeKey<String> CLIENT_RID = AttributeKey.stringKey("narwhal.client_rid");
  static final AttributeKey<Boolean> STREAM = AttributeKey.booleanKey("narwhal.stream");
  static final AttributeKey<String> TENANT = AttributeKey.stringKey("narwhal.tenant");
  static final AttributeKey<String> PRIORITY_CLASS = AttributeKey.stringKey("narwhal.class");
  static final AttributeKey<String> TERMINAL = AttributeKey.stringKey("narwhal.terminal");
  static final AttributeKey<String> REASON = AttributeKey.stringKey("narwhal.reason");
  static final AttributeKey<Long> ATTEMPTS = AttributeKey.longKey("narwhal.attempts");
  static final AttributeKey<Long> ATTEMPT_NUMBER = AttributeKey.longKey("narwhal.attempt");
  static final AttributeKey<String> PHASE = AttributeKey.stringKey("narwhal.phase");
  static final AttributeKey<String> ENGINE = AttributeKey.stringKey("narwhal.engine");
  static final AttributeKey<String> PREFILL_ENGINE = AttributeKey.stringKey("narwhal.prefill.engine");
  static final AttributeKey<String> DECODE_ENGINE = AttributeKey.stringKey("narwhal.decode.engine");
  static final AttributeKey<String> BACKEND_ID = AttributeKey.stringKey("narwhal.engine.request_id");
  static final AttributeKey<Boolean> SAME_WORKER = AttributeKey.booleanKey("narwhal.same_worker");
  static final AttributeKey<Double> HANDOFF_AGE = AttributeKey.doubleKey("narwhal.handoff.age_s");
  static final AttributeKey<String> FAULT_KIND = AttributeKey.stringKey("narwhal.fault.kind");
  static final AttributeKey<String> FAULT_PHASE = AttributeKey.stringKey("narwhal.fault.phase");
  static final AttributeKey<String> RETRY_REASON = AttributeKey.stringKey("narwhal.retry_reason");
  static final AttributeKey<Long> OUTPUT_CHARS = AttributeKey.longKey("narwhal.output_chars");

  private final Tracing tracing;
  private final Span request;
  private final Context requestContext;
  private Span attempt;
  private Context attemptContext;
  private Span placement;
  private Span prefill;
  private Span decode;
  private Span relay;
  private boolean ended;

  RecordingTrace(Tracing tracing, Context parent, Start start) {
    this.tracing = tracing;
    String operation = start.operation();
    String name = start.model() == null ? operation : operation + " " + Tracing.cut(start.model(), Tracing.MAX_NAME_MODEL_CHARS);
    request = tracing.tracer().spanBuilder(name).setParent(parent).setSpanKind(SpanKind.SERVER)
        .setStartTimestamp(tracing.epochNanos(start.arrivedNanos()), Tracing.unit())
        .setAttribute(OPERATION, operation).setAttribute(REQUEST_MODEL, start.model())
        .setAttribute(METHOD, start.method()).setAttribute(PATH, start.endpoint()).setAttribute(RID, start.rid())
        .setAttribute(STREAM, start.stream()).startSpan();
    if (start.clientRid() != null) request.setAttribute(CLIENT_RID, start.clientRid());
    if (start.maxTokens() instanceof Number n) request.setAttribute(MAX_TOKENS, n.longValue());
    requestContext = parent.with(request);
  }

  private long now() {
    return tracing.epochNanos(System.nanoTime());
  }

  private Span child(String name, Context parent, SpanKind kind, long startEpochNanos) {
    return tracing.tracer().spanBuilder(name).setParent(parent).setSpanKind(kind)
        .setStartTimestamp(startEpochNanos, Tracing.unit()).startSpan();
  }

  private Context attemptContext() {
    return attemptContext != null ? attemptContext : requestContext;
  }

  @Override
  public String traceId() {
    return request.getSpanContext().getTraceId();
  }

  @Override
  public void tenant(String name, String priorityClass) {
    if (ended) return;
    request.setAttribute(TENANT, name);
    request.setAttribute(PRIORITY_CLASS, priorityClass);
  }

  @Override
  public void attempt(int number) {
    if (ended) return;
    endAttempt(null);
    attempt = child(ATTEMPT, requestContext, SpanKind.INTERNAL, now());
    attempt.setAttribute(ATTEMPT_NUMBER, (long) number);
    attemptContext = requestContext.with(attempt);
  }

  @Override
  public <T> Future<T> placement(Phase phase, Future<T> reservation, Function<T, String> iid) {
    if (ended) return reservation;
    Span span = child(PLACEMENT, attemptContext(), SpanKind.INTERNAL, now());
    span.setAttribute(PHASE, phase.wireName());
    placement = span;
    return reservation.onComplete(ar -> {
      if (placement == span) placement = null;
      if (ended) return;
      if (ar.succeeded()) {
        String engine = iid.apply(ar.result());
        span.setAttribute(ENGINE, engine);
        if (attempt != null && !ended) attempt.setAttribute(phase == Phase.PREFILL ? PREFILL_ENGINE : DECODE_ENGINE, engine);
      } else {
        failed(span, ar.cause());
      }
      span.end(now(), Tracing.unit());
    });
  }

  @Override
  public Future<PrefillResult> prefill(String engine, String requestId, Function<Map<String, String>, Future<PrefillResult>> leg) {
    if (ended) return leg.apply(Map.of());
    Span span = child(PREFILL, attemptContext(), SpanKind.CLIENT, now());
    span.setAttribute(ENGINE, engine).setAttribute(BACKEND_ID, requestId);
    prefill = span;
    return leg.apply(headers(span)).onComplete(ar -> prefillEnded(span, ar));
  }

  private void prefillEnded(Span span, AsyncResult<PrefillResult> ar) {
    if (prefill == span) prefill = null;
    if (ended) return;
    long now = now();
    if (ar.succeeded()) {
      long responded = tracing.epochNanos(ar.result().legCompletedNanos());
      span.end(responded, Tracing.unit());
      child(VALIDATION, attemptContext(), SpanKind.INTERNAL, responded).end(now, Tracing.unit());
      return;
    }
    failed(span, ar.cause());
    span.end(now, Tracing.unit());
    if (ar.cause() instanceof EngineFault fault && fault.kind() == FaultKind.INVALID_DESCRIPTOR) {
      Span validation = child(VALIDATION, attemptContext(), SpanKind.INTERNAL, now);
      failed(validation, fault);
      validation.end(now, Tracing.unit());
    }
  }

  @Override
  public Map<String, String> decode(String engine, String requestId, boolean sameWorker, long handoffAgeNanos) {
    Map<String, String> headers = whole(engine, requestId);
    if (!ended) decode.setAttribute(SAME_WORKER, sameWorker).setAttribute(HANDOFF_AGE, handoffAgeNanos / 1e9);
    return headers;
  }

  @Override
  public Map<String, String> whole(String engine, String requestId) {
    if (ended) return Map.of();
    decode = child(DECODE, attemptContext(), SpanKind.CLIENT, now());
    decode.setAttribute(ENGINE, engine).setAttribute(BACKEND_ID, requestId);
    return headers(decode);
  }

  @Override
  public Future<DecodeEnd> decodeEnd(Future<DecodeEnd> end) {
    Span span = decode;
    if (span == null) return end;
    return end.onComplete(ar -> {
      if (decode == span) decode = null;
      if (ended) return;
      if (ar.succeeded()) {
        DecodeEnd result = ar.result();
        if (result.finishReason() != null) span.setAttribute(FINISH_REASONS, List.of(result.finishReason()));
        usage(span, result.usage());
      } else {
        failed(span, ar.cause());
      }
      span.end(now(), Tracing.unit());
    });
  }

  @Override
  public void firstOutput(long nanoTime) {
    if (ended) return;
    long at = tracing.epochNanos(nanoTime);
    if (decode != null) decode.addEvent(FIRST_TOKEN, at, Tracing.unit());
    if (relay != null) relay.end(at, Tracing.unit());
    relay = child(RELAY, attemptContext(), SpanKind.INTERNAL, at);
  }

  @Override
  public void attemptFailed(EngineFault fault, String retryReason) {
    if (ended || attempt == null) return;
    attempt.setAttribute(RETRY_REASON, retryReason);
    endAttempt(fault);
  }

  @Override
  public void attemptEnded(String reason) {
    if (ended || attempt == null) return;
    attempt.setAttribute(ERROR_TYPE, reason).setStatus(StatusCode.ERROR, reason);
    endAttempt(null);
  }

  @Override
  public void completed(JsonObject usage, String finishReason, long outputChars) {
    if (ended) return;
    usage(request, usage);
    if (finishReason != null) request.setAttribute(FINISH_REASONS, List.of(finishReason));
    if (relay != null) relay.setAttribute(OUTPUT_CHARS, outputChars);
  }

  @Override
  public void finished(String terminal, String reason, int status, String errorType, int attempts) {
    if (ended) return;
    ended = true;
    long now = now();
    for (Span open : new Span[] {placement, prefill, decode}) {
      if (open != null) {
        open.setAttribute(TERMINAL, terminal);
        open.end(now, Tracing.unit());
      }
    }
    if (relay != null) relay.end(now, Tracing.unit());
    if (attempt != null) {
      if (!"completed".equals(terminal)) attempt.setAttribute(TERMINAL, terminal);
      attempt.end(now, Tracing.unit());
    }
    request.setAttribute(STATUS, (long) status).setAttribute(TERMINAL, terminal).setAttribute(ATTEMPTS, (long) attempts);
    if (reason != null) request.setAttribute(REASON, reason).setAttribute(ERROR_TYPE, reason);
    if (status >= 500) request.setStatus(StatusCode.ERROR, reason == null ? terminal : reason);
    request.end(now, Tracing.unit());
  }

  private void endAttempt(EngineFault fault) {
    if (attempt == null) return;
    if (fault != null) failed(attempt, fault);
    attempt.end(now(), Tracing.unit());
    attempt = null;
    attemptContext = null;
  }

  private static void usage(Span span, JsonObject usage) {
    if (usage == null) return;
    if (usage.getValue("prompt_tokens") instanceof Number n) span.setAttribute(INPUT_TOKENS, n.longValue());
    if (usage.getValue("completion_tokens") instanceof Number n) span.setAttribute(OUTPUT_TOKENS, n.longValue());
    if (usage.getValue("prompt_tokens_details") instanceof JsonObject details
        && details.getValue("cached_tokens") instanceof Number n) {
      span.setAttribute(CACHED_TOKENS, n.longValue());
    }
  }

  private static void failed(Span span, Throwable cause) {
    if (cause instanceof EngineFault fault) {
      span.setAttribute(FAULT_KIND, fault.kind().reason()).setAttribute(FAULT_PHASE, fault.phase().wireName())
          .setAttribute(ERROR_TYPE, fault.kind().reason()).setStatus(StatusCode.ERROR, Tracing.cut(fault.detail(), Tracing.MAX_VALUE_CHARS));
    } else if (cause instanceof CancellationException) {
      span.setAttribute(ERROR_TYPE, "cancelled");
    } else if (cause != null) {
      String message = String.valueOf(cause.getMessage());
      span.setAttribute(ERROR_TYPE, cause.getClass().getSimpleName()).setStatus(StatusCode.ERROR, Tracing.cut(message, Tracing.MAX_VALUE_CHARS));
    }
  }

  /** The W3C trace-context headers that make {@code span} the parent of what an engine does for the leg. */
  private Map<String, String> headers(Span span) {
    Map<String, String> headers = new HashMap<>(4);
    W3CTraceContextPropagator.getInstance().inject(requestContext.with(span), headers, Map::put);
    return headers;
  }
}
