package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.HashSet;
import java.util.Set;

/**
 * The life of one inference request on a simulated engine: admission against the KV block pool,
 * the KV pull of a decode leg, prefill queueing and time to first token, token emission
 * (streamed or assembled), the fault it carries, and the release of its blocks — as a prefill's
 * handoff, or freed — exactly once, however it ends (including the client going away).
 */
final class InferenceRun {

  private enum State { NEW, WAITING, RUNNING, DONE }

  /** Ends the step chain quietly: the response was already handled (or the client left). */
  private static final RuntimeException HALT = new RuntimeException("halt", null, false, false) { };
  /** The KV pull failed and the policy (or a fault) says fail. */
  private static final RuntimeException KV_FAILED = new RuntimeException("kv load failed", null, false, false) { };

  private final SimEngine engine;
  private final Vertx vertx;
  private final RoutingContext ctx;
  private final HttpServerResponse response;
  private final CompletionRequest req;
  private final FaultRule fault;
  private final InjectedFault kind;
  private final JsonObject logEntry;
  private final long created;
  private final Set<Long> timers = new HashSet<>();

  private Answer answer;
  private SseWriter sse;
  private int[] blocks;
  private State state = State.NEW;
  private boolean closed;
  private boolean roleSent;
  private int emitted;
  private String kv = "none";

  InferenceRun(SimEngine engine, RoutingContext ctx, CompletionRequest req, FaultRule fault, JsonObject logEntry) {
    this.engine = engine;
    this.vertx = ctx.vertx();
    this.ctx = ctx;
    this.response = ctx.response();
    this.req = req;
    this.fault = fault;
    this.kind = fault == null ? null : fault.type();
    this.logEntry = logEntry;
    this.created = engine.clock().instant().getEpochSecond();
  }

  void start() {
    response.putHeader("x-request-id", req.baseId).putHeader("x-sim-kv", "none");
    ctx.addEndHandler(ar -> {
      if (ar.failed()) {
        onClientGone();
      }
    });
    if (kind != null && handledBeforeAdmission()) {
      return;
    }
    blocks = engine.blocks().allocate(req.blocksNeeded(engine.config().getBlockSize()));
    if (blocks == null) {
      respondError(ApiError.queueFull());
      return;
    }
    state = State.WAITING;
    engine.counters().waiting.incrementAndGet();
    boolean prefill = "prefill".equals(req.phase);
    answer = Answer.of(req, Generator.generate(req.prompt, req.seed, req.temperature, prefill ? 1 : req.maxTokens,
      !prefill && req.ignoreEos), engine.config().getReasoningField());

    transferKv()
      .compose(this::applyKvOutcome)
      .compose(v -> openResponse())
      .compose(v -> metadataFrames())
      .compose(v -> prefill())
      .compose(v -> emitTokens())
      .compose(v -> terminate())
      .onFailure(this::onStepFailure);
  }

  // ---- faults that end the request before it is admitted

  private boolean handledBeforeAdmission() {
    switch (kind) {
      case STATUS: {
        int status = fault.intParam("status", 500);
        respondError(new ApiError(status, fault.stringParam("message", defaultMessage(status)),
          fault.stringParam("type", null), null));
        return true;
      }
      case QUEUE_FULL:
        respondError(ApiError.queueFull());
        return true;
      case REFUSE:
        finish(false);
        engine.refuse(fault.hasParam("seconds") ? fault.doubleParam("seconds", 0) : -1);
        ctx.request().connection().close();
        return true;
      case RESET:
        if (fault.intParam("after", 0) == 0) {
          finish(false);
          ctx.request().connection().close();
          return true;
        }
        return false;
      case HANG_BEFORE_HEADERS:
        return true;
      default:
        return false;
    }
  }

  // ---- steps

  private Future<KvPuller.Result> transferKv() {
    if (!req.remotePrefill) {
      return Future.succeededFuture();
    }
    if (kind == InjectedFault.KV_TRANSFER_FAIL) {
      return Future.succeededFuture(new KvPuller.Result(KvPuller.Outcome.ERROR, 0, "injected kv_transfer_fail"));
    }
    return engine.puller().pull(req.kvParams).compose(result -> result.outcome() == KvPuller.Outcome.TRANSFERRED
      ? delay(engine.config().getKvTransferPerBlockMs() * result.blocks()).map(result)
      : Future.succeededFuture(result));
  }

  private Future<Void> applyKvOutcome(KvPuller.Result result) {
    if (closed) {
      return Future.failedFuture(HALT);
    }
    if (result == null) {
      return Future.succeededFuture();
    }
    EngineStats stats = engine.counters();
    boolean failed = false;
    switch (result.outcome()) {
      case TRANSFERRED:
        stats.kvTransferred.incrementAndGet();
        kv = "transferred";
        break;
      case ERROR:
        stats.kvTransferFailed.incrementAndGet();
        if (kind == InjectedFault.KV_TRANSFER_FAIL || "fail".equals(engine.config().getKvLoadFailurePolicy())) {
          failed = true;
          kv = "failed";
          break;
        }
        stats.kvRecomputed.incrementAndGet();
        kv = "recomputed";
        break;
      default:
        stats.kvRecomputed.incrementAndGet();
        kv = "recomputed";
    }
    response.putHeader("x-sim-kv", kv);
    engine.log().update(logEntry, "kv", kv);
    return failed ? Future.failedFuture(KV_FAILED) : Future.succeededFuture();
  }

  private Future<Void> openResponse() {
    if (req.stream) {
      sse = new SseWriter(response).open();
    }
    if (kind != InjectedFault.HANG_AFTER_HEADERS) {
      return Future.succeededFuture();
    }
    if (!req.stream) {
      response.setStatusCode(200).setChunked(true).putHeader("content-type", "application/json");
      response.writeHead();
    }
    return Promise.<Void>promise().future();
  }

  private Future<Void> metadataFrames() {
    if (kind != InjectedFault.METADATA_THEN_OUTPUT) {
      return Future.succeededFuture();
    }
    int frames = fault.intParam("frames", 3);
    double interval = fault.doubleParam("interval_ms", 0);
    Future<Void> chain = Future.succeededFuture();
    for (int i = 0; i < frames; i++) {
      boolean first = i == 0;
      chain = chain.compose(v -> first ? Future.succeededFuture() : delay(interval)).compose(v -> metadataFrame());
    }
    return chain.compose(v -> delay(interval));
  }

  private Future<Void> metadataFrame() {
    if (closed) {
      return Future.failedFuture(HALT);
    }
    if (sse == null) {
      return Future.succeededFuture();
    }
    if (req.chat && !roleSent) {
      roleSent = true;
      return sse.frame(ResponseShapes.roleChunk(req, created, answer));
    }
    return sse.frame(ResponseShapes.outputChunk(req, created, "", null));
  }

  private Future<Void> prefill() {
    SimEngineOptions o = engine.config();
    double duration = o.getTtftBaseMs() + ("transferred".equals(kv) ? 0 : o.getTtftPerPromptTokenMs() * req.promptTokens);
    long queueing = engine.lane().reserve(duration);
    return delay(queueing)
      .compose(v -> {
        markRunning();
        return delay(duration);
      });
  }

  private Future<Void> emitTokens() {
    int total = answer.deltas().size();
    int limit = total;
    if (kind == InjectedFault.DONE_BEFORE_OUTPUT) {
      limit = 0;
    } else if (kind == InjectedFault.CLOSE_BEFORE_DONE || kind == InjectedFault.SILENCE_AFTER
      || kind == InjectedFault.ERROR_IN_STREAM || kind == InjectedFault.RESET) {
      limit = Math.min(total, fault.intParam("after", 0));
    }
    Promise<Void> done = Promise.promise();
    emitFrom(done, limit, false);
    return done.future();
  }

  private void emitFrom(Promise<Void> done, int limit, boolean waited) {
    while (true) {
      if (closed) {
        done.tryFail(HALT);
        return;
      }
      if (emitted >= limit) {
        done.tryComplete();
        return;
      }
      long itl = emitted == 0 ? 0 : Math.round(interTokenMs());
      if (itl > 0 && !waited) {
        long keepalive = kind == InjectedFault.SLOW_TOKENS ? Math.round(fault.doubleParam("keepalive_ms", 0)) : 0;
        if (keepalive > 0) keepAlive(System.nanoTime() + itl * 1_000_000, keepalive);
        timer(itl, () -> emitFrom(done, limit, true));
        return;
      }
      waited = false;
      writeToken(emitted++);
      if (sse != null && sse.queueFull()) {
        response.drainHandler(v -> emitFrom(done, limit, false));
        return;
      }
    }
  }

  /** {@code slow_tokens} with {@code keepalive_ms}: metadata frames while waiting for the next token, as engines that heartbeat do. */
  private void keepAlive(long untilNanos, long everyMs) {
    timer(everyMs, () -> {
      if (!closed && System.nanoTime() < untilNanos) {
        metadataFrame();
        keepAlive(untilNanos, everyMs);
      }
    });
  }

  private double interTokenMs() {
    if (kind == InjectedFault.SLOW_TOKENS) {
      return fault.doubleParam("itl_ms", 0);
    }
    SimEngineOptions o = engine.config();
    return o.getItlMs() + o.getItlPerRunningMs() * engine.counters().running.get();
  }

  private void writeToken(int i) {
    Answer.Delta delta = answer.deltas().get(i);
    if (delta.token() >= 0) {
      engine.counters().generationTokens.incrementAndGet();
    }
    if (sse == null) {
      return;
    }
    if (req.chat && !roleSent) {
      roleSent = true;
      sse.frame(ResponseShapes.roleChunk(req, created, answer));
    }
    boolean last = i == answer.deltas().size() - 1;
    sse.frame(ResponseShapes.deltaChunk(req, created, answer, delta, i == 0, last));
  }

  private Future<Void> terminate() {
    if (kind == null) {
      return completeNormally();
    }
    switch (kind) {
      case DONE_BEFORE_OUTPUT:
        return doneBeforeOutput();
      case CLOSE_BEFORE_DONE:
        return sse != null ? endWithoutDone() : abortMidBody();
      case RESET:
        return abortMidBody();
      case SILENCE_AFTER:
        return Promise.<Void>promise().future();
      case ERROR_IN_STREAM:
        return errorInStream();
      default:
        return completeNormally();
    }
  }

  private Future<Void> completeNormally() {
    if (sse == null) {
      JsonObject descriptor = "prefill".equals(req.phase) ? handOff() : null;
      JsonObject body = ResponseShapes.full(req, created, answer, descriptor);
      finish(true);
      return respondJson(200, body);
    }
    if (req.chat && !roleSent) {
      roleSent = true;
      sse.frame(ResponseShapes.roleChunk(req, created, answer));
    }
    if (answer.deltas().isEmpty()) {
      sse.frame(ResponseShapes.outputChunk(req, created, "", answer.finishReason()));
    }
    if (req.includeUsage) {
      sse.frame(ResponseShapes.usageChunk(req, created, answer.completionTokens()));
    }
    if ("prefill".equals(req.phase)) {
      handOff();
    }
    finish(true);
    sse.done();
    return sse.end();
  }

  private Future<Void> doneBeforeOutput() {
    finish(false);
    if (sse == null) {
      return respondJson(200, ResponseShapes.full(req, created, Answer.of(req, new Generator.Output(java.util.List.of(), "stop"), ""), null));
    }
    if (req.chat) {
      sse.frame(ResponseShapes.roleChunk(req, created, answer));
    }
    sse.done();
    return sse.end();
  }

  private Future<Void> endWithoutDone() {
    finish(false);
    return sse.end();
  }

  /** Headers and part of the body, then the connection goes away: an abrupt close mid-response. */
  private Future<Void> abortMidBody() {
    finish(false);
    if (sse == null && !response.headWritten()) {
      response.setStatusCode(200).setChunked(true).putHeader("content-type", "application/json");
      String partial = ResponseShapes.full(req, created, answer, null).encode();
      response.write(Buffer.buffer(partial.substring(0, partial.length() / 2)));
    }
    ctx.request().connection().close();
    return Future.succeededFuture();
  }

  private Future<Void> errorInStream() {
    int code = fault.intParam("code", 500);
    String message = fault.stringParam("message", defaultMessage(code));
    String type = fault.stringParam("type", ApiError.typeFor(code));
    finish(false);
    if (sse == null) {
      respondError(new ApiError(code, message, type, null));
      return Future.succeededFuture();
    }
    sse.frame(ApiError.envelope(message, type, null, code));
    sse.done();
    return sse.end();
  }

  private void onStepFailure(Throwable err) {
    if (err == HALT || closed) {
      return;
    }
    if (err == KV_FAILED) {
      finish(false);
      ApiError error = ApiError.internal();
      if (sse == null && !req.stream) {
        respondError(error);
        return;
      }
      if (sse == null) {
        sse = new SseWriter(response).open();
      }
      sse.frame(error.toJson());
      sse.done();
      sse.end();
      return;
    }
    finish(false);
    if (!response.headWritten()) {
      respondError(new ApiError(500, "Internal server error: " + err.getMessage(), "InternalServerError", null));
    } else {
      ctx.request().connection().close();
    }
  }

  /** Issues the prefill's descriptor and hands its blocks to the handoff store. */
  private JsonObject handOff() {
    JsonObject descriptor = PrefillHandoff.issue(engine, req, blocks, fault);
    blocks = null;
    return descriptor;
  }

  // ---- bookkeeping

  private void markRunning() {
    if (state == State.WAITING) {
      state = State.RUNNING;
      engine.counters().waiting.decrementAndGet();
      engine.counters().running.incrementAndGet();
      engine.counters().promptTokens.addAndGet(req.promptTokens);
    }
  }

  /** Releases the request's slot and any blocks it still owns; idempotent. */
  private void finish(boolean completed) {
    if (state == State.WAITING) {
      engine.counters().waiting.decrementAndGet();
    } else if (state == State.RUNNING) {
      engine.counters().running.decrementAndGet();
    }
    state = State.DONE;
    if (blocks != null) {
      engine.blocks().free(blocks);
      blocks = null;
    }
    if (!completed) {
      timers.forEach(vertx::cancelTimer);
      timers.clear();
    }
  }

  private void onClientGone() {
    closed = true;
    finish(false);
  }

  private Future<Void> delay(double ms) {
    long rounded = Math.round(ms);
    if (rounded <= 0) {
      return closed ? Future.failedFuture(HALT) : Future.succeededFuture();
    }
    Promise<Void> promise = Promise.promise();
    timer(rounded, () -> {
      if (closed) {
        promise.tryFail(HALT);
      } else {
        promise.tryComplete();
      }
    });
    return promise.future();
  }

  private void timer(long ms, Runnable action) {
    long[] id = new long[1];
    id[0] = vertx.setTimer(ms, t -> {
      timers.remove(id[0]);
      action.run();
    });
    timers.add(id[0]);
  }

  private Future<Void> respondJson(int status, JsonObject body) {
    if (response.closed() || response.ended()) {
      return Future.succeededFuture();
    }
    return response.setStatusCode(status).putHeader("content-type", "application/json").end(body.toBuffer());
  }

  private void respondError(ApiError error) {
    finish(false);
    if (!response.headWritten()) {
      respondJson(error.status, error.toJson());
    }
  }

  private static String defaultMessage(int status) {
    return status == 500 ? "Internal server error" : ApiError.phrase(status);
  }
}
