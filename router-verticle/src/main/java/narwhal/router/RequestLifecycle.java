package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Failures;
import narwhal.common.bus.LegOutcome;
import narwhal.common.bus.Reservation;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.engines.client.DecodeCall;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.client.DecodeStream;
import narwhal.engines.client.PrefillCall;
import narwhal.engines.connector.HandoffExpectations;
import narwhal.engines.connector.PrefillResult;
import narwhal.engines.sse.SseEvent;
import narwhal.router.telemetry.RequestTrace;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;

/**
 * One client request from admission to its single terminal outcome. It owns the deadline, the attempts
 * (prefill → validated handoff → decode), the reservations, the open legs, the retry decision and the
 * journal row; every ending goes through {@link #finish}, which releases everything exactly once.
 * Confined to the event loop of the client's connection.
 */
final class RequestLifecycle implements Admission.Cuttable {
  private final RouterContext ctx;
  private final NarwhalConfig cfg;
  private final InferenceRequest request;
  private final ClientSink sink;
  private final Runnable onFinish;
  private final RequestTrace trace;
  /** The series of the model placement accepted for this request; null until it accepted one. */
  private ModelMetrics.Model perModel;
  private String acceptedModel;
  private final Set<Reservation> held = new LinkedHashSet<>();
  private final Set<String> excluded = new HashSet<>();
  private final List<JsonObject> attemptFailures = new ArrayList<>();
  private final Promise<Void> cancelLegs = Promise.promise();
  private final long deadlineNanos;
  private Context context;
  private long deadlineTimer = -1;
  private long backoffTimer = -1;
  private int attempt;
  private boolean dispatched;
  private boolean done;
  private DecodeStream decode;
  private Attempt current;
  private long ttftNanos = -1;
  private long firstByteNanos = -1;
  /** {@link System#nanoTime()} of the decode dispatch, of the first and of the latest output of the current attempt. */
  private long decodeSentAt;
  private long firstOutputAt;
  private long lastOutputAt;
  /** The attempt whose failure scheduled the pending retry, its fault and its journal entry. */
  private Attempt retried;
  private EngineFault retriedFault;
  private JsonObject retriedEntry;
  private boolean fitChecked;
  private int handoffsLeft;
  /** The engine's usage of the completed decode, null until then (or when it sent none). */
  private JsonObject usage;

  /** A retry found no credit left when its prefill was about to dispatch (another request spent it meanwhile). */
  private static final class RetryDenied extends RuntimeException {
    RetryDenied() {
      super("no retry credit at dispatch", null, false, false);
    }
  }

  /** The request does not fit the model's context ({@link ContextFit}): refused before any leg. */
  private static final class ContextRefused extends RuntimeException {
    final EdgeError error;

    ContextRefused(EdgeError error) {
      super(error.message(), null, false, false);
      this.error = error;
    }
  }

  /** The engines and handoff of one attempt. */
  private static final class Attempt {
    final int number;
    Reservation producer;
    Reservation consumer;
    PrefillResult handoff;
    boolean decodeOutput;
    boolean handoffLeft;

    Attempt(int number) {
      this.number = number;
    }
  }

  RequestLifecycle(RouterContext ctx, InferenceRequest request, ClientSink sink, Runnable onFinish) {
    this(ctx, request, sink, onFinish, RequestTrace.OFF);
  }

  RequestLifecycle(RouterContext ctx, InferenceRequest request, ClientSink sink, Runnable onFinish, RequestTrace trace) {
    this.ctx = ctx;
    this.trace = trace;
    this.cfg = ctx.config().get();
    this.request = request;
    this.sink = sink;
    this.onFinish = onFinish;
    this.deadlineNanos = request.arrivedNanos() + cfg.serving().requestTimeoutMs() * 1_000_000;
  }

  void start() {
    request.response().closeHandler(v -> cancelled());
    startPart();
  }

  /** Starts one prompt of a {@link PromptBatch}: the batch, not this part, watches the client's connection. */
  void startPart() {
    context = ctx.vertx().getOrCreateContext();
    ctx.admission().track(this);
    deadlineTimer = ctx.vertx().setTimer(Math.max(1, remainingMs()), t -> expire());
    runAttempt();
  }

  /** Ends a batch's part because another prompt of the batch failed: the client already has that failure. */
  void abandon() {
    if (done) return;
    ctx.metrics().cancelled();
    finish("cancelled", "batch_failed", 499, null);
  }

  private void runAttempt() {
    Attempt a = new Attempt(++attempt);
    current = a;
    trace.attempt(a.number);
    reserve(Phase.PREFILL, null)
        .compose(producer -> fits(producer).map(producer))
        .compose(producer -> prefill(a, producer))
        .compose(handoff -> reserve(Phase.DECODE, a.producer.iid()).map(consumer -> {
          a.consumer = consumer;
          return handoff;
        }))
        .compose(handoff -> decode(a, handoff))
        .onSuccess(end -> completed(a, end))
        .onFailure(err -> attemptFailed(a, err));
  }

  private Future<Reservation> reserve(Phase phase, String avoid) {
    if (done) return Future.failedFuture(new CancellationException());
    return trace.placement(phase, ctx.controlBus().reserve(new ReserveRequest(request.rid(), phase, List.copyOf(excluded), avoid,
            phase == Phase.PREFILL ? request.affinity() : null, request.model()))
        .onSuccess(this::held), Reservation::iid);
  }

  /**
   * A reservation: placement accepted the request's model (a configured one or an adapter an engine lists), which from
   * now on labels its per-model series and its journal row; a name no engine serves never becomes a label.
   */
  private void held(Reservation reservation) {
    held.add(reservation);
    if (acceptedModel == null) {
      acceptedModel = request.model();
      perModel = ctx.models().of(acceptedModel);
    }
  }

  /** The first attempt asks whether the request fits the context; a request that does not is refused here. */
  private Future<Void> fits(Reservation producer) {
    if (fitChecked) return Future.succeededFuture();
    fitChecked = true;
    return ContextFit.check(ctx, request, producer).compose(refusal -> {
      if (refusal.isEmpty()) return Future.succeededFuture();
      release(producer);
      return Future.failedFuture(new ContextRefused(refusal.get()));
    });
  }

  private Future<PrefillResult> prefill(Attempt a, Reservation producer) {
    a.producer = producer;
    if (a.number > 1) {
      // The decision saw a credit; the retry spends it now, when its prefill dispatches. Another request may have
      // spent the last one during the backoff: then this retry does not run.
      if (!ctx.retryBudget().trySpend()) return Future.failedFuture(new RetryDenied());
      ctx.metrics().retryAttempt();
    }
    dispatched = true;
    ctx.metrics().prefillAttempt();
    String requestId = request.rid() + "-a" + a.number + "-prefill";
    return trace.prefill(producer.iid(), requestId, headers -> ctx.engines().prefill(new PrefillCall(producer.url(),
            request.endpoint(), request.body(), request.model(), requestId, cfg.serving().prefillTimeoutMs(),
            expectations(producer.iid()), headers), cancelLegs.future())
        .onComplete(ar -> release(producer))
        .onSuccess(handoff -> {
          a.handoff = handoff;
          ttftNanos = handoff.legCompletedNanos() - request.arrivedNanos();
          perModel.prefillLeg(handoff.legCompletedNanos() - handoff.legStartedNanos());
          ctx.controlBus().report(LegOutcome.success(producer.iid(), Phase.PREFILL));
        }));
  }

  private HandoffExpectations expectations(String producerIid) {
    EngineFacts.Facts facts = ctx.facts().get(producerIid);
    String connector = cfg.engine().connector();
    return new HandoffExpectations(HandoffExpectations.DEFAULT_TRANSFER_MODE,
        facts.connector() != null ? facts.connector() : connector, connector, facts.sideChannel());
  }

  private Future<DecodeEnd> decode(Attempt a, PrefillResult handoff) {
    long boundMs = ctx.facts().handoffBoundMs(a.producer.iid(), cfg.engine().kvLeaseS());
    long ageMs = (System.nanoTime() - handoff.legStartedNanos()) / 1_000_000;
    if (boundMs > 0 && ageMs > boundMs) {
      return Future.failedFuture(new EngineFault(FaultKind.HANDOFF_EXPIRED, Phase.DECODE, 504,
          "KV handoff expired before decode dispatch", "handoff_expired"));
    }
    ctx.metrics().decodeAttempt();
    boolean sameWorker = a.consumer.iid().equals(a.producer.iid());
    String requestId = request.rid() + "-a" + a.number + "-decode";
    decodeSentAt = System.nanoTime();
    long handoffAge = decodeSentAt - handoff.legCompletedNanos();
    perModel.handoffAge(handoffAge);
    DecodeCall call = new DecodeCall(a.consumer.url(), request.endpoint(), request.body(), request.model(), requestId, sameWorker,
        cfg.engine().firstTokenTimeoutMs(), cfg.engine().decodeReadTimeoutMs(),
        trace.decode(a.consumer.iid(), requestId, sameWorker, handoffAge));
    sink.attemptStarted();
    DecodeStream stream = ctx.engines().decode(handoff, call);
    decode = stream;
    Runnable resume = stream::resume;
    stream.handler(event -> relay(a, event, stream, resume));
    return trace.decodeEnd(stream.end().onComplete(ar -> release(a.consumer)));
  }

  private void relay(Attempt a, SseEvent event, DecodeStream stream, Runnable resume) {
    if (done) return;
    if (event instanceof SseEvent.Output output) {
      long now = System.nanoTime();
      if (!a.decodeOutput) {
        a.decodeOutput = true;
        firstByteNanos = now - request.arrivedNanos();
        firstOutputAt = now;
        perModel.decodeFirstToken(now - decodeSentAt);
        trace.firstOutput(now);
      } else {
        perModel.interToken(now - lastOutputAt);
      }
      lastOutputAt = now;
      sink.output(output);
    } else if (event instanceof SseEvent.Metadata metadata) {
      sink.metadata(metadata);
    }
    if (sink.congested(resume)) stream.pause();
  }

  private void completed(Attempt a, DecodeEnd end) {
    if (done) return;
    ctx.controlBus().report(LegOutcome.success(a.consumer.iid(), Phase.DECODE));
    sink.complete(end);
    account(end);
    ctx.retryBudget().completed();
    ctx.metrics().served(attempt > 1);
    finish("completed", null, 200, null);
  }

  private void attemptFailed(Attempt a, Throwable err) {
    if (done) return;
    if (remainingMs() <= 0) {
      // A leg that fails at the very moment the original deadline passes lost a race with the deadline timer:
      // the request's own deadline is what ended it (leg bounds are not clamped to it; its timer owns it).
      expire();
      return;
    }
    if (err instanceof RetryDenied) {
      trace.attemptEnded("shared_budget");
      retryDenied(a);
      return;
    }
    if (err instanceof ContextRefused refused) {
      attempt = 0;
      current = null;
      sink.fail(refused.error);
      ctx.metrics().invalid();
      finish("invalid", refused.error.reason(), refused.error.status(), refused.error.type());
      return;
    }
    if (err instanceof ReplyException reply) {
      trace.attemptEnded(reply.failureCode() == Failures.FLEET_HOLD ? "fleet_hold" : "no_engine");
      noEngine(reply);
      return;
    }
    EngineFault engineFault = err instanceof EngineFault f ? f
        : new EngineFault(FaultKind.BAD_RESPONSE, Phase.DECODE, "unexpected router failure: " + err.getMessage());
    String engineIid = engineFault.phase() == Phase.PREFILL ? a.producer.iid() : a.consumer == null ? null : a.consumer.iid();
    boolean adapterMissing = engineFault.kind() == FaultKind.ENGINE_MODEL_MISSING && engineIid != null
        && !request.model().equals(BaseModels.of(cfg, engineIid));
    if (adapterMissing) ctx.controlBus().unlist(engineIid, request.model());
    EngineFault fault = adapterMissing ? engineFault.notTheEnginesBaseModel() : engineFault;
    reportFailure(a, fault, engineIid);
    if (fault.phase() == Phase.PREFILL) {
      excluded.add(a.producer.iid());
    } else if (!a.decodeOutput && fault.kind() != FaultKind.HANDOFF_EXPIRED) {
      excluded.add(a.producer.iid());
      if (a.consumer != null) excluded.add(a.consumer.iid());
    }
    boolean transientFault = fault.isTransient() && !a.decodeOutput;
    long backoffMs = RetryDecision.backoffMs(ctx.jitter().getAsDouble(), a.number, cfg.serving().retryBaseMs(), cfg.serving().retryCapMs());
    String retryReason = RetryDecision.decide(new RetryDecision.Facts(dispatched, sink.committed(), a.number,
        cfg.serving().maxAttempts(), transientFault, backoffMs, remainingMs(), ctx.retryBudget().available()));
    boolean retry = RetryDecision.ALLOWED.equals(retryReason);
    JsonObject entry = new JsonObject().put("attempt", a.number).put("phase", fault.phase().wireName())
        .put("reason", fault.kind().reason()).put("prefill_iid", a.producer.iid())
        .put("decode_iid", a.consumer == null ? null : a.consumer.iid()).put("status", fault.status())
        .put("transient", transientFault).put("output_started", sink.committed()).put("retry_reason", retryReason)
        .put("backoff_s", retry ? backoffMs / 1000.0 : null).put("error_message", fault.detail());
    if (leftToLease(a)) entry.put("handoff", "left_to_lease");
    attemptFailures.add(entry);
    ctx.metrics().attemptFailure(fault.phase().wireName(), fault.kind().reason());
    trace.attemptFailed(fault, retryReason);
    if (retry) {
      retried = a;
      retriedFault = fault;
      retriedEntry = entry;
      backoffTimer = ctx.vertx().setTimer(Math.max(1, backoffMs), t -> {
        backoffTimer = -1;
        if (!done) runAttempt();
      });
      return;
    }
    if ("shared_budget".equals(retryReason)) ctx.metrics().retryDenied();
    fail(a, fault);
  }

  /**
   * The retry scheduled after {@code retried} failed found the credit pool empty at dispatch: it never ran. The
   * request ends with the fault that asked for it, and the journal records that retry as denied by the budget.
   */
  private void retryDenied(Attempt denied) {
    release(denied.producer);
    attempt = retried.number;
    current = retried;
    retriedEntry.put("retry_reason", "shared_budget").put("backoff_s", (Object) null);
    ctx.metrics().retryDenied();
    fail(retried, retriedFault);
  }

  /** Ends the request with an engine fault of attempt {@code a}: no attempt follows. */
  private void fail(Attempt a, EngineFault fault) {
    // Before output an engine's own error type (4xx answer, error object) reaches the client as is; once output
    // exists the failure ends the stream (or the assembled answer) with the phase as its type (docs/errors.md).
    String errorType = a.decodeOutput ? fault.phase().wireName() : fault.errorType();
    EdgeError error = new EdgeError(fault.status(), errorType, fault.detail(), a.decodeOutput ? null : fault.param(),
        a.decodeOutput ? null : fault.code(), fault.kind().reason(), false);
    sink.fail(error);
    String terminal = fault.kind() == FaultKind.HANDOFF_EXPIRED ? "expired" : "failed";
    if ("expired".equals(terminal)) ctx.metrics().expired(fault.kind().reason()); else ctx.metrics().failed(fault.kind().reason());
    finish(terminal, fault.kind().reason(), fault.status(), errorType);
  }

  private void reportFailure(Attempt a, EngineFault fault, String engineIid) {
    if (engineIid == null) return;
    boolean crossed = a.consumer != null && !a.consumer.iid().equals(a.producer.iid());
    String producer = fault.phase() == Phase.DECODE && crossed ? a.producer.iid() : null;
    ctx.controlBus().report(new LegOutcome(engineIid, fault.phase(), false, fault.kind().failureClass(), fault.kind().reason(),
        producer, fault.kind().quarantines()));
  }

  private void noEngine(ReplyException reply) {
    if (reply.failureCode() == Failures.MODEL_NOT_FOUND) {
      EdgeError error = EdgeError.modelNotFound(request.model());
      attempt = 0;
      current = null;
      sink.fail(error);
      ctx.metrics().invalid();
      finish("invalid", error.reason(), error.status(), error.type());
      return;
    }
    EdgeError error = reply.failureCode() == Failures.FLEET_HOLD ? EdgeError.standby() : EdgeError.noEngine(dispatched, request.model());
    sink.fail(error);
    String terminal = dispatched ? "failed" : "rejected";
    if (dispatched) ctx.metrics().failed(error.reason()); else ctx.metrics().rejected(error.reason());
    finish(terminal, error.reason(), error.status(), error.type());
  }

  private void expire() {
    deadlineTimer = -1;
    if (done) return;
    EdgeError error = EdgeError.deadline();
    sink.fail(error);
    ctx.metrics().expired(error.reason());
    finish("expired", error.reason(), error.status(), error.type());
  }

  @Override
  public void cut() {
    context.runOnContext(v -> {
      if (done) return;
      EdgeError error = EdgeError.graceExpired();
      sink.fail(error);
      ctx.metrics().failed(error.reason());
      finish("failed", error.reason(), error.status(), error.type());
    });
  }

  void cancelled() {
    if (done) return;
    ctx.metrics().cancelled();
    finish("cancelled", "client_disconnected", 499, null);
  }

  /**
   * Whether attempt {@code a} leaves its prefill's KV blocks to the producer's lease: the prefill handed off and no
   * decode output followed, so no consumer is known to have read them, and nothing else frees them (vLLM has no
   * abort API for a finished prefill). Counted once per attempt.
   */
  private boolean leftToLease(Attempt a) {
    if (a == null || a.handoff == null || a.decodeOutput || a.handoffLeft) return false;
    a.handoffLeft = true;
    handoffsLeft++;
    ctx.metrics().handoffLeft();
    return true;
  }

  private void release(Reservation reservation) {
    if (reservation != null && held.remove(reservation)) ctx.controlBus().release(reservation);
  }

  private long remainingMs() {
    return (deadlineNanos - System.nanoTime()) / 1_000_000;
  }

  private void finish(String terminal, String reason, int status, String errorType) {
    done = true;
    if (deadlineTimer >= 0) ctx.vertx().cancelTimer(deadlineTimer);
    if (backoffTimer >= 0) ctx.vertx().cancelTimer(backoffTimer);
    cancelLegs.tryComplete();
    if (decode != null) decode.cancel();
    if (!"completed".equals(terminal)) leftToLease(current);
    for (Reservation r : List.copyOf(held)) release(r);
    if (ttftNanos >= 0) ctx.metrics().ttft(ttftNanos);
    if (firstByteNanos >= 0) ctx.metrics().firstByte(firstByteNanos);
    trace.finished(terminal, reason, status, errorType, attempt);
    ctx.journal().append(journalRow(terminal, reason, status, errorType));
    ctx.admission().untrack(this);
    onFinish.run();
  }

  private JsonObject journalRow(String terminal, String reason, int status, String errorType) {
    Attempt a = current;
    boolean hasDecode = a != null && a.consumer != null;
    return new JsonObject().put("rid", request.rid()).put("client_rid", request.clientRid())
        .put("model", acceptedModel).put("endpoint", request.endpoint())
        .put("arrived", request.arrived().toString()).put("terminal", terminal).put("reason", reason).put("status", status)
        .put("error_type", errorType).put("ttft_s", seconds(ttftNanos)).put("first_byte_s", seconds(firstByteNanos))
        .put("prefill_iid", a == null || a.producer == null ? null : a.producer.iid())
        .put("decode_iid", hasDecode ? a.consumer.iid() : null)
        .put("prefill_placement", a == null || a.producer == null ? null : a.producer.reason())
        .put("decode_placement", hasDecode ? a.consumer.reason() : null)
        .put("crossed", hasDecode ? !a.consumer.iid().equals(a.producer.iid()) : null)
        .put("attempts", attempt).put("attempt_failures", new JsonArray(new ArrayList<>(attemptFailures)))
        .put("output_len", sink.outputLength()).put("handoffs_left", handoffsLeft)
        .put("prompt_tokens", usageCount("prompt_tokens")).put("completion_tokens", usageCount("completion_tokens"))
        .put("cached_tokens", cachedTokens()).put("trace_id", trace.traceId())
        .put("duration_s", (System.nanoTime() - request.arrivedNanos()) / 1e9);
  }

  /**
   * The request's tokens, counted and timed per model (docs/metrics.md): the engine's usage, time per output token
   * (vLLM's definition: the decode's time after its first output over the tokens after the first), end to end.
   */
  private void account(DecodeEnd end) {
    usage = end.usage();
    perModel.usage(usage);
    long now = System.nanoTime();
    perModel.e2e(now - request.arrivedNanos());
    Integer completion = usageCount("completion_tokens");
    int tokens = completion != null ? completion : end.outputFrames();
    if (tokens > 1) perModel.perOutputToken((lastOutputAt - firstOutputAt) / (tokens - 1));
    trace.completed(usage, end.finishReason(), sink.outputLength());
  }

  private Integer usageCount(String field) {
    return usage != null && usage.getValue(field) instanceof Number n ? n.intValue() : null;
  }

  private Integer cachedTokens() {
    return usage != null && usage.getValue("prompt_tokens_details") instanceof JsonObject details
        && details.getValue("cached_tokens") instanceof Number n ? n.intValue() : null;
  }

  private static Double seconds(long nanos) {
    return nanos < 0 ? null : nanos / 1e9;
  }

  /** Arrival instant, for tests and the journal. */
  Instant arrived() {
    return request.arrived();
  }
}
