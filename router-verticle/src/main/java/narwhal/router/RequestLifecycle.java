package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Failures;
import narwhal.common.bus.LegOutcome;
import narwhal.common.bus.Reservation;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.EdgeFailure;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.common.fault.RequestOutcome;
import narwhal.common.fault.RetryReason;
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
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;

/**
 * One client request from admission to its single terminal outcome, whatever its endpoint. It owns the deadline, the
 * attempts, the reservations, the open legs, the retry decision and the journal row; every ending goes through
 * {@link #finish}, which releases everything exactly once. An attempt runs one of three leg kinds: disaggregated
 * (prefill → validated handoff → decode, the output relayed frame by frame to a {@link ClientSink}), local (a prompt
 * short enough for {@link LocalPrefill}: one decode on a {@code both} engine, with no remote prefill and no handoff,
 * relayed as a decode is; disaggregated when no such engine can take it), or whole (one leg on one decode-capable
 * engine, its answer relayed as is by a {@link WholeLeg}). Confined to the event loop of the client's connection.
 */
final class RequestLifecycle implements Admission.Cuttable {
  private final RouterContext ctx;
  private final NarwhalConfig cfg;
  private final InferenceRequest request;
  /** Where the ending goes: {@link #sink} or {@link #whole}. */
  private final ClientEnd client;
  /** A disaggregated request's output; null for a whole one. */
  private final ClientSink sink;
  /** A whole request's leg; null for a disaggregated one. */
  private final WholeLeg whole;
  private final Runnable onFinish;
  private final RequestTrace trace;
  /** The series of the model placement accepted for this request; null until it accepted one. */
  private ModelMetrics.Model perModel;
  private String acceptedModel;
  private final Set<Reservation> held = new LinkedHashSet<>();
  private static final int STOPPING_RETRIES = 2;

  private final Set<String> excluded = new HashSet<>();
  private final List<JsonObject> attemptFailures = new ArrayList<>();
  private final Promise<Void> cancelLegs = Promise.promise();
  private final long deadlineNanos;
  private Context context;
  private long deadlineTimer = -1;
  private long backoffTimer = -1;
  private int attempt;
  /** Attempts added beyond {@code serving.max_attempts} because an engine was stopping (at most {@value #STOPPING_RETRIES}). */
  private int stoppingRetries;
  /** Whether a producer's facts were re-read for this request (at most once: a restart in place, {@link FactsRelearner}). */
  private boolean relearned;
  /** Whether the facts re-read showed the producer restarted in place: the attempt is tried again, no fault counted. */
  private boolean restarted;
  private boolean dispatched;
  private boolean done;
  private DecodeStream decode;
  private Attempt current;
  private long ttftNanos = -1;
  private long firstByteNanos = -1;
  /** How long its attempts waited for turns at the router, summed; -1 while none asked for one. */
  private long queuedNanos = -1;
  /**
   * When the attempt waiting for its turn now asked for it; -1 when none waits. A request that ends while its attempt
   * waits (its client left, its deadline, a stop's cut) writes its row before the turn's failure reaches it: its wait
   * is counted then ({@link #queuedUntil}), or the row said null, "no attempt asked for a turn".
   */
  private long turnAskedNanos = -1;
  private Retried retried;
  private boolean fitChecked;
  private int handoffsLeft;
  /** The engine's usage of the completed decode, null until then (or when it sent none). */
  private JsonObject usage;
  /** Whether attempts try a local leg first (placement.local_prefill_max_tokens, as configured at arrival). */
  private final boolean localFirst;
  /**
   * A batch's part: where it waits, once its prompt is known to fit, until every prompt of the batch is known to
   * ({@link PromptBatch}), so no prefill runs for a batch vLLM would refuse whole; null once passed, and for a request
   * of one prompt.
   */
  private java.util.function.Supplier<Future<Void>> fitGate;

  /** A retry found no credit left when its first leg was about to dispatch (another request spent it meanwhile). */
  private static final class RetryDenied extends RuntimeException {
    RetryDenied() {
      super("no retry credit at dispatch", null, false, false);
    }
  }

  /** The request is refused before any leg (it does not fit the model's context: {@link ContextFit}). */
  private static final class Refused extends RuntimeException {
    final EdgeError error;

    Refused(EdgeError error) {
      super(error.message(), null, false, false);
      this.error = error;
    }
  }

  /** The attempt whose failure scheduled the pending retry, its fault and its {@code attempt_failures[]} entry. */
  private record Retried(Attempt attempt, EngineFault fault, JsonObject entry) {
  }

  /** The engines and handoff of one attempt, and when its decode was sent and gave its first and latest output. */
  private static final class Attempt {
    final int number;
    Reservation producer;
    Reservation consumer;
    PrefillResult handoff;
    /** Its turn under {@code serving.max_legs_in_flight} ({@link Admission.LegTurn}); null until it asked for one. */
    Admission.LegTurn turn;
    /** A local leg: {@link #producer} and {@link #consumer} are its one reservation. */
    boolean local;
    boolean decodeOutput;
    boolean handoffLeft;
    /** The router refused the prefill's handoff, whose descriptor named KV blocks: they stay held on the producer. */
    boolean handoffRefused;
    /** {@link System#nanoTime()} readings. */
    long decodeSentAt;
    long firstOutputAt;
    long lastOutputAt;

    Attempt(int number) {
      this.number = number;
    }
  }

  RequestLifecycle(RouterContext ctx, InferenceRequest request, ClientSink sink, Runnable onFinish) {
    this(ctx, request, sink, onFinish, RequestTrace.OFF);
  }

  RequestLifecycle(RouterContext ctx, InferenceRequest request, ClientSink sink, Runnable onFinish, RequestTrace trace) {
    this(ctx, request, sink, null, onFinish, trace);
  }

  /** A request an engine runs whole: {@code whole} is its leg and the client's end. */
  RequestLifecycle(RouterContext ctx, InferenceRequest request, WholeLeg whole, Runnable onFinish, RequestTrace trace) {
    this(ctx, request, null, whole, onFinish, trace);
  }

  private RequestLifecycle(RouterContext ctx, InferenceRequest request, ClientSink sink, WholeLeg whole, Runnable onFinish,
      RequestTrace trace) {
    this.ctx = ctx;
    this.trace = trace;
    this.cfg = ctx.config().get();
    this.request = request;
    this.sink = sink;
    this.whole = whole;
    this.client = sink != null ? sink : whole;
    this.onFinish = onFinish;
    this.deadlineNanos = request.arrivedNanos() + cfg.serving().requestTimeoutMs() * 1_000_000;
    this.localFirst = whole == null && LocalPrefill.eligible(request.body(), request.chat(), cfg.placement().localPrefillMaxTokens());
  }

  void start() {
    trace.tenant(request.lane().tenant().name(), request.lane().tenant().priorityClass());
    request.response().closeHandler(v -> cancelled());
    startPart();
  }

  /** Starts one prompt of a {@link PromptBatch}: the batch, not this part, watches the client's connection. */
  void startPart() {
    context = ctx.vertx().getOrCreateContext();
    ctx.admission().track(this);
    deadlineTimer = ctx.vertx().setTimer(Math.max(1, remainingMs()), t -> expire());
    if (whole == null) {
      runAttempt();
      return;
    }
    whole.pin().onSuccess(refusal -> {
      if (done) return;
      if (refusal.isPresent()) refuse(refusal.get()); else runAttempt();
    });
  }

  /**
   * Makes this part of a batch wait, after its context check passed and before its first leg, for {@code gate}: it
   * completes once every prompt of the batch fits, and fails when the batch ended first (a prompt was refused).
   */
  void gateAfterFit(java.util.function.Supplier<Future<Void>> gate) {
    this.fitGate = gate;
  }

  /** Ends a batch's part because another prompt of the batch failed: the client already has that failure. */
  void abandon() {
    if (done) return;
    ctx.metrics().cancelled();
    finish(RequestOutcome.CANCELLED, EdgeFailure.BATCH_FAILED.wireName(), 499, null);
  }

  private void runAttempt() {
    Attempt a = new Attempt(++attempt);
    current = a;
    trace.attempt(a.number);
    (whole != null ? whole(a) : localFirst ? localOrDisaggregated(a) : disaggregated(a))
        .onComplete(ar -> releaseTurn(a))
        .onSuccess(end -> completed(a, end))
        .onFailure(err -> attemptFailed(a, err));
  }

  private Future<DecodeEnd> disaggregated(Attempt a) {
    return reserve(Phase.PREFILL, null)
        .compose(producer -> fits(a, producer).map(producer))
        .compose(producer -> legTurn(a, producer.iid()).map(producer))
        .compose(producer -> stillTaking(producer, Phase.PREFILL, false))
        .compose(producer -> prefill(a, producer).andThen(ar -> a.turn.prefillEnded()))
        .compose(handoff -> reserve(Phase.DECODE, a.producer.iid()).map(consumer -> {
          a.consumer = consumer;
          return handoff;
        }))
        .compose(handoff -> decode(a, handoff));
  }

  /** A local leg on a {@code both} engine of the request's model, or the disaggregated legs when none can take it. */
  private Future<DecodeEnd> localOrDisaggregated(Attempt a) {
    return reserve(Phase.DECODE, null, true).transform(ar -> {
      if (ar.succeeded()) return local(a, ar.result());
      if (ar.cause() instanceof ReplyException reply && reply.failureCode() == Failures.NO_ENGINE) return disaggregated(a);
      return Future.failedFuture(ar.cause());
    });
  }

  /**
   * The one leg of a short prompt on {@code engine}: the client's request as a same-worker decode (no transfer
   * parameters), its frames relayed as a decode's; its first output ends the prefill it ran itself.
   */
  private Future<DecodeEnd> local(Attempt a, Reservation reserved) {
    a.local = true;
    a.producer = reserved;
    a.consumer = reserved;
    return fits(a, reserved).compose(v -> legTurn(a)).compose(v -> stillTaking(reserved, Phase.DECODE, true)).compose(engine -> {
      a.producer = engine;
      a.consumer = engine;
      if (!dispatch(a)) return Future.failedFuture(new RetryDenied());
      ctx.metrics().decodeAttempt();
      String requestId = request.rid() + "-a" + a.number + "-local";
      a.decodeSentAt = System.nanoTime();
      DecodeCall call = new DecodeCall(engine.url(), request.endpoint(), request.body(), request.model(), requestId, true,
          cfg.engine().firstTokenTimeoutMs(), cfg.engine().decodeReadTimeoutMs(), trace.decode(engine.iid(), requestId, true, 0));
      sink.attemptStarted();
      DecodeStream stream = ctx.engines().decode(null, call);
      decode = stream;
      Runnable resume = stream::resume;
      stream.handler(event -> relay(a, event, stream, resume));
      return trace.decodeEnd(stream.end().onComplete(ar -> release(engine)));
    });
  }

  /** The one leg of a whole request, on a decode-capable engine of its model: its answer goes to the client as is. */
  private Future<DecodeEnd> whole(Attempt a) {
    return reserve(Phase.DECODE, null).compose(consumer -> legTurn(a).map(consumer))
        .compose(consumer -> stillTaking(consumer, Phase.DECODE, false)).compose(consumer -> {
      a.consumer = consumer;
      if (!dispatch(a)) return Future.failedFuture(new RetryDenied());
      ctx.metrics().decodeAttempt();
      String requestId = request.rid() + "-a" + a.number + "-whole";
      java.util.Map<String, String> headers = trace.whole(consumer.iid(), requestId);
      long headersMs = request.stream() ? cfg.engine().firstTokenTimeoutMs() : Math.max(1, remainingMs());
      return trace.decodeEnd(whole.send(consumer, requestId, headers, headersMs, cancelLegs.future())
          .compose(resp -> whole.relay(resp, consumer.iid(), () -> firstOutput(a, System.nanoTime())))
          .onComplete(ar -> release(consumer)));
    });
  }

  /**
   * Attempt {@code a} waits, its prompt known to fit and before its first leg, for a turn under
   * {@code serving.max_legs_in_flight} (one count across the replica's requests and batches' prompts): a waiting
   * attempt has sent nothing to an engine, so it holds no KV; it keeps its reservation, the engine it will use.
   */
  private Future<Void> legTurn(Attempt a) {
    return legTurn(a, null);
  }

  /** As above; {@code producer}: where its prefill goes, which it also waits for under {@code flow.prefill_legs_max}. */
  private Future<Void> legTurn(Attempt a, String producer) {
    if (done) return Future.failedFuture(new CancellationException());
    a.turn = ctx.admission().legTurn(cfg.serving().maxLegsInFlight(), context, request.lane(), request.model(), producer,
        cfg.flow().queueTimeoutMs(),
        cfg.flow().maxQueued());
    long asked = System.nanoTime();
    turnAskedNanos = asked;
    Admission.LegTurn turn = a.turn;
    return turn.granted().andThen(ar -> {
      if (turnAskedNanos != asked) return;
      turnAskedNanos = -1;
      queuedNanos = Math.max(0, queuedNanos) + (ar.succeeded() ? turn.waitedNanos() : System.nanoTime() - asked);
    }).compose(v -> done ? Future.failedFuture(new CancellationException()) : Future.succeededFuture());
  }

  /** The time its attempts waited for turns up to {@code now}, the one waiting now included (its row is written). */
  private long queuedUntil(long now) {
    if (turnAskedNanos < 0) return queuedNanos;
    long waited = Math.max(0, queuedNanos) + Math.max(0, now - turnAskedNanos);
    turnAskedNanos = -1;
    queuedNanos = waited;
    return waited;
  }

  /**
   * The engine reserved before the attempt waited for its turn, or, when it left the fleet or service meanwhile (a
   * reload removed it, an operator drained it), another of the phase: an engine out of service takes no new legs.
   */
  private Future<Reservation> stillTaking(Reservation reserved, Phase phase, boolean local) {
    narwhal.common.bus.LocalPlacement placement = narwhal.common.bus.LocalPlacement.of(ctx.vertx());
    if (placement == null || placement.takes(reserved.iid())) return Future.succeededFuture(reserved);
    release(reserved);
    return reserve(phase, null, local);
  }

  /** Attempt {@code a} has ended (or the request did): its turn goes to the next attempt waiting for one. */
  private void releaseTurn(Attempt a) {
    if (a != null && a.turn != null) a.turn.release(ctx.config().get().serving().maxLegsInFlight());
  }

  /**
   * What an engine does while it stops gracefully (vLLM on SIGTERM): refuses connections, resets them, answers 503. A
   * two-leg request failing so before any output reached the client is retried on another engine even past
   * {@code serving.max_attempts} (docs/operations.md#replacing-and-scaling-engines): the engine took no work from it.
   * (A request an engine runs whole may be pinned to its engine: it keeps {@code serving.max_attempts}.)
   */
  private static boolean engineStopping(EngineFault fault) {
    return fault.kind() == FaultKind.CONNECT_ERROR || fault.kind() == FaultKind.CONNECTION_RESET
        || fault.kind() == FaultKind.ENGINE_OVERLOADED && fault.engineStatus() == 503;
  }

  private Future<Reservation> reserve(Phase phase, String avoid) {
    return reserve(phase, avoid, false);
  }

  /** {@code local}: a decode leg running the whole request on a {@code both} engine, placed by the prompt's affinity. */
  private Future<Reservation> reserve(Phase phase, String avoid, boolean local) {
    if (done) return Future.failedFuture(new CancellationException());
    List<String> exclude = whole == null ? excludedFor(phase, avoid) : whole.exclude(new ArrayList<>(excluded), cfg);
    return trace.placement(phase, ctx.controlBus().reserve(new ReserveRequest(request.rid(), phase, exclude, avoid,
            phase == Phase.PREFILL || local ? request.affinity() : null, request.model(), local))
        .onSuccess(this::held), Reservation::iid);
  }

  /**
   * The engines a reservation must not take: those excluded so far, and for a decode every engine of another base model
   * than its producer's ({@code producer}): a KV handoff never crosses models, also when engines of two base models
   * list an adapter or alias of the same name.
   */
  private List<String> excludedFor(Phase phase, String producer) {
    if (phase != Phase.DECODE || producer == null) return List.copyOf(excluded);
    NarwhalConfig now = ctx.config().get();
    String base = BaseModels.of(now, producer);
    List<String> out = null;
    for (EngineConfig e : now.engines()) {
      if (base != null && !e.model().equals(base)) {
        if (out == null) out = new ArrayList<>(excluded);
        out.add(e.iid());
      }
    }
    return out == null ? List.copyOf(excluded) : out;
  }

  /**
   * Attempt {@code a} sends its first leg. A retry spends its credit now: the decision saw one, but another request may
   * have spent the last one during the backoff; then this retry does not run (false).
   */
  private boolean dispatch(Attempt a) {
    if (a.number > 1) {
      if (!ctx.retryBudget().trySpend()) return false;
      ctx.metrics().retryAttempt();
    }
    dispatched = true;
    return true;
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

  /**
   * Asks, until once settled, whether the request fits the context; a request that does not is refused here. The
   * producer's {@code /tokenize} is part of the prefill phase: bounded as its leg is, its silence is the producer's
   * prefill timeout (sent to the engine, so retried as one: the next attempt asks again).
   */
  private Future<Void> fits(Attempt a, Reservation producer) {
    if (fitChecked) return Future.succeededFuture();
    fitChecked = true;
    long boundMs = Math.max(1, Math.min(cfg.serving().prefillTimeoutMs(), remainingMs()));
    return ContextFit.check(ctx, request, producer, boundMs, cancelLegs.future()).compose(refusal -> {
      if (refusal.isEmpty()) return passGate();
      release(producer);
      return Future.failedFuture(new Refused(refusal.get()));
    }, err -> {
      release(producer);
      if (err instanceof EngineFault) {
        a.producer = producer;
        dispatched = true;
        fitChecked = false;
      }
      return Future.failedFuture(err);
    });
  }

  /** A batch's part waits for the batch's other prompts to fit ({@link #gateAfterFit}); at once for anything else. */
  private Future<Void> passGate() {
    java.util.function.Supplier<Future<Void>> gate = fitGate;
    if (gate == null) return Future.succeededFuture();
    fitGate = null;
    return gate.get().compose(v -> done ? Future.failedFuture(new CancellationException()) : Future.succeededFuture());
  }

  private Future<PrefillResult> prefill(Attempt a, Reservation producer) {
    a.producer = producer;
    if (!dispatch(a)) return Future.failedFuture(new RetryDenied());
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
        })
        .onFailure(err -> a.handoffRefused = err instanceof EngineFault f && f.leavesKvHeld()));
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
    a.decodeSentAt = System.nanoTime();
    long handoffAge = a.decodeSentAt - handoff.legCompletedNanos();
    perModel.handoffAge(handoffAge);
    DecodeCall call = new DecodeCall(a.consumer.url(), request.endpoint(), request.body(), request.model(), requestId, sameWorker,
        cfg.engine().firstTokenTimeoutMs(), cfg.engine().decodeReadTimeoutMs(),
        trace.decode(a.consumer.iid(), requestId, sameWorker, handoffAge));
    sink.attemptStarted();
    sink.promptLogprobs(handoff.promptLogprobs());
    sink.reasoningField(ctx.facts().reasoningField(a.consumer.iid()));
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
        firstOutput(a, now);
        if (a.local) ttftNanos = now - request.arrivedNanos();
        a.firstOutputAt = now;
        perModel.decodeFirstToken(now - a.decodeSentAt);
      } else {
        perModel.interToken(now - a.lastOutputAt);
      }
      a.lastOutputAt = now;
      ctx.facts().reasoningField(a.consumer.iid(), output.reasoningField());
      sink.output(output);
    } else if (event instanceof SseEvent.Metadata metadata) {
      sink.metadata(metadata);
    }
    if (sink.congested(resume)) stream.pause();
  }

  /** Attempt {@code a}'s first output reached the client at {@code now}: from here on it is not retried. */
  private void firstOutput(Attempt a, long now) {
    a.decodeOutput = true;
    firstByteNanos = now - request.arrivedNanos();
    trace.firstOutput(now);
  }

  private void completed(Attempt a, DecodeEnd end) {
    if (done) return;
    ctx.controlBus().report(LegOutcome.success(a.consumer.iid(), Phase.DECODE));
    client.complete(end);
    account(a, end);
    ctx.retryBudget().completed();
    ctx.metrics().served(attempt > 1);
    finish(RequestOutcome.COMPLETED, null, 200, null);
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
      trace.attemptEnded(RetryReason.SHARED_BUDGET.wireName());
      retryDenied(a);
      return;
    }
    if (err instanceof Refused refused) {
      refuse(refused.error);
      return;
    }
    if (err instanceof Admission.QueueRefused queue) {
      shed(EdgeError.queueRefused(queue.timedOut));
      return;
    }
    if (err instanceof WholeLeg.EngineRefused refused) {
      engineRefused(a, refused);
      return;
    }
    if (err instanceof ReplyException reply && reply.failureCode() == Failures.NO_ENGINE && retried != null
        && a.number > configuredMaxAttempts()) {
      trace.attemptEnded("no_engine");
      noOtherEngine(a);
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
    if (whole == null && !relearned && a.producer != null && !a.decodeOutput && !client.committed()
        && FactsRelearner.signsARestart(fault)) {
      relearned = true;
      ctx.vertx().eventBus().<Boolean>request(FactsRelearner.RELEARN, new JsonObject().put("iid", a.producer.iid()))
          .onComplete(changed -> {
            restarted = changed.succeeded() && Boolean.TRUE.equals(changed.result().body());
            attemptFailed(a, err);
          });
      return;
    }
    boolean relearn = restarted;
    restarted = false;
    if (!relearn) {
      reportFailure(a, fault, engineIid);
    }
    if (relearn) {
      // the producer restarted in place: its facts are re-read before the request is tried again, no fault counted
    } else if (fault.phase() == Phase.PREFILL) {
      excluded.add(a.producer.iid());
    } else if (!a.decodeOutput && fault.kind() != FaultKind.HANDOFF_EXPIRED) {
      if (a.producer != null && (whole != null || !engineStopping(fault))) excluded.add(a.producer.iid());
      if (a.consumer != null) excluded.add(a.consumer.iid());
    }
    boolean transientFault = relearn || fault.isTransient() && !a.decodeOutput;
    long backoffMs = RetryDecision.backoffMs(ctx.jitter().getAsDouble(), a.number, cfg.serving().retryBaseMs(), cfg.serving().retryCapMs());
    if (whole == null && transientFault && !client.committed() && engineStopping(fault) && stoppingRetries < STOPPING_RETRIES) {
      stoppingRetries++;
    }
    int maxAttempts = stoppingRetries + (relearn ? 1 : 0) + configuredMaxAttempts();
    RetryReason retryReason = RetryDecision.decide(new RetryDecision.Facts(dispatched, client.committed(), a.number,
        maxAttempts, transientFault, backoffMs, remainingMs(), ctx.retryBudget().available()));
    boolean retry = retryReason == RetryReason.ALLOWED;
    JsonObject entry = JournalRow.attemptFailure(a.number, fault, a.producer, a.consumer, transientFault, client.committed(),
        retryReason, retry ? backoffMs / 1000.0 : null);
    if (leftToLease(a)) entry.put("handoff", "left_to_lease");
    attemptFailures.add(entry);
    ctx.metrics().attemptFailure(fault.phase().wireName(), fault.kind().reason());
    trace.attemptFailed(fault, retryReason.wireName());
    if (retry) {
      retried = new Retried(a, fault, entry);
      if (relearn) {
        runAttempt();
        return;
      }
      backoffTimer = ctx.vertx().setTimer(Math.max(1, backoffMs), t -> {
        backoffTimer = -1;
        if (!done) runAttempt();
      });
      return;
    }
    if (retryReason == RetryReason.SHARED_BUDGET) ctx.metrics().retryDenied();
    Optional<EdgeError> ownerGone = whole == null ? Optional.empty() : whole.ownerRefused(fault);
    if (ownerGone.isPresent()) {
      client.fail(ownerGone.get());
      ctx.metrics().invalid();
      finish(RequestOutcome.INVALID, ownerGone.get().reason(), ownerGone.get().status(), ownerGone.get().type());
      return;
    }
    fail(a, fault);
  }

  /**
   * The engine of a whole request answered the request's own fault, passed to the client as is: evidence for nothing.
   * vLLM's 404 for an adapter the engine no longer lists takes the adapter off the engine's list, as for any leg.
   */
  private void engineRefused(Attempt a, WholeLeg.EngineRefused refused) {
    if (refused.modelMissing && !request.model().equals(BaseModels.of(cfg, a.consumer.iid()))) {
      ctx.controlBus().unlist(a.consumer.iid(), request.model());
    }
    ctx.metrics().invalid();
    finish(RequestOutcome.INVALID, FaultKind.ENGINE_REJECTED.reason(), refused.status, refused.type);
  }

  /**
   * The retry scheduled after {@code retried} failed found the credit pool empty at dispatch: it never ran. The
   * request ends with the fault that asked for it, and the journal records that retry as denied by the budget.
   */
  private void retryDenied(Attempt denied) {
    release(denied.producer);
    release(denied.consumer);
    attempt = retried.attempt().number;
    current = retried.attempt();
    retried.entry().put("retry_reason", RetryReason.SHARED_BUDGET.wireName()).put("backoff_s", (Object) null);
    ctx.metrics().retryDenied();
    fail(retried.attempt(), retried.fault());
  }

  /**
   * The attempt added past {@code serving.max_attempts} because an engine was stopping found no other engine: the
   * request ends with the fault of the stopping engine, as it would have without that attempt.
   */
  private void noOtherEngine(Attempt extra) {
    release(extra.producer);
    release(extra.consumer);
    attempt = retried.attempt().number;
    current = retried.attempt();
    retried.entry().put("retry_reason", RetryReason.ATTEMPT_LIMIT.wireName()).put("backoff_s", (Object) null);
    fail(retried.attempt(), retried.fault());
  }

  private int configuredMaxAttempts() {
    return whole == null ? cfg.serving().maxAttempts() : whole.maxAttempts(cfg.serving().maxAttempts());
  }

  /** Ends the request with an engine fault of attempt {@code a}: no attempt follows. */
  private void fail(Attempt a, EngineFault fault) {
    EdgeError error = EdgeError.ofEngine(fault, a.decodeOutput, cfg.engines());
    String errorType = error.type();
    client.fail(error);
    RequestOutcome terminal = fault.kind() == FaultKind.HANDOFF_EXPIRED ? RequestOutcome.EXPIRED : RequestOutcome.FAILED;
    if (terminal == RequestOutcome.EXPIRED) ctx.metrics().expired(fault.kind().reason()); else ctx.metrics().failed(fault.kind().reason());
    finish(terminal, fault.kind().reason(), fault.status(), errorType);
  }

  private void reportFailure(Attempt a, EngineFault fault, String engineIid) {
    if (engineIid == null) return;
    boolean crossed = a.producer != null && a.consumer != null && !a.consumer.iid().equals(a.producer.iid());
    String producer = fault.phase() == Phase.DECODE && crossed ? a.producer.iid() : null;
    ctx.controlBus().report(new LegOutcome(engineIid, fault.phase(), false, fault.kind().failureClass(), fault.kind().reason(),
        producer, fault.kind().quarantines()));
  }

  private void noEngine(ReplyException reply) {
    Optional<EdgeError> ownerGone = whole == null || dispatched || reply.failureCode() != Failures.NO_ENGINE
        ? Optional.empty() : whole.ownerGone();
    if (reply.failureCode() == Failures.MODEL_NOT_FOUND || ownerGone.isPresent()) {
      refuse(ownerGone.orElseGet(() -> EdgeError.modelNotFound(request.model())));
      return;
    }
    EdgeError error = reply.failureCode() == Failures.FLEET_HOLD ? EdgeError.standby() : EdgeError.noEngine(dispatched, request.model());
    client.fail(error);
    RequestOutcome terminal = dispatched ? RequestOutcome.FAILED : RequestOutcome.REJECTED;
    if (dispatched) {
      ctx.metrics().failed(error.reason());
    } else if (reply.failureCode() == Failures.NO_ENGINE) {
      ctx.models().of(request.model()).noEngine();
    } else {
      ctx.metrics().rejected(error.reason());
    }
    finish(terminal, error.reason(), error.status(), error.type());
  }

  /** The request waited for a turn too long, or was shed from a full queue ({@code flow}): 429, rejected. */
  private void shed(EdgeError error) {
    if (done) return;
    client.fail(error);
    ctx.metrics().rejected(error.reason());
    finish(RequestOutcome.REJECTED, error.reason(), error.status(), error.type());
  }

  /** The request is refused before any leg ran: it counts no attempt. */
  private void refuse(EdgeError error) {
    attempt = 0;
    current = null;
    client.fail(error);
    ctx.metrics().invalid();
    finish(RequestOutcome.INVALID, error.reason(), error.status(), error.type());
  }

  private void expire() {
    deadlineTimer = -1;
    if (done) return;
    EdgeError error = EdgeError.deadline();
    ending();
    client.fail(error);
    ctx.metrics().expired(error.reason());
    finish(RequestOutcome.EXPIRED, error.reason(), error.status(), error.type());
  }

  @Override
  public void cut() {
    context.runOnContext(v -> {
      if (done) return;
      EdgeError error = EdgeError.graceExpired();
      ending();
      client.fail(error);
      ctx.metrics().failed(error.reason());
      finish(RequestOutcome.FAILED, error.reason(), error.status(), error.type());
    });
  }

  /**
   * Ends the request from outside its attempt (its deadline, a stop's cut) before the client hears it: a batch's part
   * waiting for a turn has its wait failed by that very answer ({@link PromptBatch} fails the batch), and its attempt,
   * failing then, finds it done instead of ending it a second time (a second journal row and outcome, the batch's
   * in-flight slot freed early).
   */
  private void ending() {
    done = true;
  }

  void cancelled() {
    if (done) return;
    ctx.metrics().cancelled();
    finish(RequestOutcome.CANCELLED, EdgeFailure.CLIENT_DISCONNECTED.wireName(), 499, null);
  }

  /**
   * Whether attempt {@code a} leaves its prefill's KV blocks to the producer's lease: the prefill handed off (or its
   * handoff was refused with blocks named) and no decode output followed, so no consumer is known to have read them,
   * and nothing else frees them (vLLM has no abort API for a finished prefill). Counted once per attempt.
   */
  private boolean leftToLease(Attempt a) {
    if (a == null || (a.handoff == null && !a.handoffRefused) || a.decodeOutput || a.handoffLeft) return false;
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

  private void finish(RequestOutcome terminal, String reason, int status, String errorType) {
    done = true;
    if (deadlineTimer >= 0) ctx.vertx().cancelTimer(deadlineTimer);
    if (backoffTimer >= 0) ctx.vertx().cancelTimer(backoffTimer);
    cancelLegs.tryComplete();
    if (decode != null) decode.cancel();
    if (whole != null) whole.cancel();
    if (terminal != RequestOutcome.COMPLETED) leftToLease(current);
    for (Reservation r : List.copyOf(held)) release(r);
    releaseTurn(current);
    // a leg the client left (or that failed) has no usage: its prompt was read and its output generated all the same
    long tokens = usage != null ? tokens(usage) : dispatched ? request.lane().promptTokens() + (client.outputLength() + 3) / 4 : 0;
    ctx.admission().quotas().used(request.lane().tenant(), tokens);
    ctx.metrics().tenantTokens(request.lane().tenant(), tokens);
    if (ttftNanos >= 0) ctx.metrics().ttft(ttftNanos);
    if (firstByteNanos >= 0) ctx.metrics().firstByte(firstByteNanos);
    trace.finished(terminal.wireName(), reason, status, errorType, attempt);
    ctx.journal().append(new JournalRow(request.rid(), request.clientRid(), request.endpoint(), request.arrived(),
            request.arrivedNanos())
        .model(acceptedModel).tenant(request.lane()).ending(terminal, reason, status, errorType).queued(queuedUntil(System.nanoTime())).timing(ttftNanos, firstByteNanos)
        .engines(current == null ? null : current.producer, current == null ? null : current.consumer)
        .attempts(attempt, attemptFailures).output(client.outputLength(), handoffsLeft).usage(usage)
        .prefillCached(current == null || current.handoff == null ? null : current.handoff.cachedTokens())
        .traceId(trace.traceId()).done());
    ctx.admission().untrack(this);
    onFinish.run();
  }

  /**
   * The request's tokens, counted and timed per model (docs/metrics.md): the engine's usage, end to end, and for a
   * decode the time per output token (vLLM's definition: the decode's time after its first output over the tokens
   * after the first).
   */
  private void account(Attempt a, DecodeEnd end) {
    usage = end.usage();
    if (usage != null || whole == null) perModel.usage(usage);
    if (a.handoff != null && a.handoff.cachedTokens() != null) perModel.prefillCached(a.handoff.cachedTokens());
    long now = System.nanoTime();
    perModel.e2e(now - request.arrivedNanos());
    Integer completion = JournalRow.count(usage, "completion_tokens");
    int tokens = completion != null ? completion : end.outputFrames();
    if (whole == null && tokens > 1) perModel.perOutputToken((a.lastOutputAt - a.firstOutputAt) / (tokens - 1));
    trace.completed(usage, end.finishReason(), client.outputLength());
  }

  /** Prompt and completion tokens of {@code usage} (the engine's), 0 without. */
  private static long tokens(JsonObject usage) {
    Integer prompt = JournalRow.count(usage, "prompt_tokens");
    Integer completion = JournalRow.count(usage, "completion_tokens");
    return (prompt == null ? 0L : prompt) + (completion == null ? 0L : completion);
  }

  /** Arrival instant, for tests and the journal. */
  Instant arrived() {
    return request.arrived();
  }
}
