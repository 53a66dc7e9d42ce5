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
 * The life of one inference request on a simulated engine: admission against the KV block pool (sharing its
 * cached prompt prefix), the KV pull of a decode leg, its place in the engine's continuous batch (prefill of the
 * uncached prompt, then one token per step), token emission (streamed or assembled), the fault it carries, and the
 * release of its blocks and batch slot — as a prefill's handoff, or freed — exactly once, however it ends
 * (including the client going away).
 */
final class InferenceRun implements BatchScheduler.Listener {

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
  private final long arrivedNanos = System.nanoTime();

  private Answer answer;
  private SseWriter sse;
  private int[] blocks;
  private long[] hashes = new long[0];
  private int cachedBlocks;
  private int cachedTokens;
  private BatchScheduler.Sequence seq;
  private Promise<Void> generated;
  private int limit;
  private State state = State.NEW;
  private boolean closed;
  /** Counted in {@link EngineStats#deferred} while its KV is pulled. */
  private boolean deferring;
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
    if (!admit()) {
      respondError(ApiError.queueFull());
      return;
    }
    state = State.WAITING;
    engine.counters().requestWaiting();
    boolean prefill = "prefill".equals(req.phase);
    answer = Answer.of(req, Generator.generate(req.prompt, req.seed, req.temperature, prefill ? 1 : req.maxTokens,
      !prefill && req.ignoreEos), engine.config().getReasoningField());

    transferKv()
      .compose(this::applyKvOutcome)
      .compose(v -> openResponse())
      .compose(v -> metadataFrames())
      .compose(v -> generate())
      .compose(v -> terminate())
      .onFailure(this::onStepFailure);
  }

  /**
   * Takes the request's blocks from the pool: the cached blocks of its prompt prefix (counted as prefix cache
   * queries and hits, in tokens) and fresh ones for the rest of its prompt and output; false when they do not fit.
   */
  private boolean admit() {
    SimEngineOptions o = engine.config();
    int blockSize = o.getBlockSize();
    if (o.isPrefixCaching()) {
      hashes = PromptBlocks.hashes(req.prompt, blockSize);
    }
    BlockPool.Allocation allocation = engine.blocks().allocate(hashes, PromptBlocks.maxHits(req.promptTokens, blockSize),
      req.blocksNeeded(blockSize));
    if (allocation == null) {
      return false;
    }
    blocks = allocation.blocks();
    cachedBlocks = allocation.cachedBlocks();
    cachedTokens = cachedBlocks * blockSize;
    return true;
  }

  /**
   * What vLLM's scheduler does when a waiting request is scheduled ({@code KVCacheManager.get_computed_blocks}, then
   * {@code allocate_slots}): its prefix is looked up again, so blocks another request was scheduled to compute since it
   * arrived are hits (its own fresh blocks for them go back to the pool and its prefill shrinks), the lookup is counted
   * as prefix-cache queries and hits. The blocks it computes are cached chunk by chunk, in {@link #chunkScheduled}.
   * Blocks pulled through a handoff are cached only once received ({@code delay_cache_blocks}), in {@link #prefilled()}.
   */
  private void scheduled() {
    SimEngineOptions o = engine.config();
    if (!o.isPrefixCaching()) {
      return;
    }
    int blockSize = o.getBlockSize();
    boolean transferred = "transferred".equals(kv);
    if (!transferred) {
      int before = cachedBlocks;
      cachedBlocks = engine.blocks().rehit(blocks, hashes, cachedBlocks, PromptBlocks.maxHits(req.promptTokens, blockSize));
      cachedTokens = cachedBlocks * blockSize;
      seq.prefillLeft -= (cachedBlocks - before) * blockSize;
    }
    engine.counters().prefixQueries.addAndGet(req.promptTokens);
    engine.counters().prefixHits.addAndGet(cachedBlocks * blockSize);
  }

  /**
   * {@code allocate_slots} then {@code cache_blocks(request, num_computed_tokens + num_new_tokens)}: the full prompt
   * blocks up to the end of the chunk this step computes are cached at once, so a request scheduled after it hits them
   * while it still computes them, or holds them for a handoff; a prefill abandoned after its first chunk leaves only
   * that chunk's blocks cached.
   */
  @Override
  public void chunkScheduled(int tokens) {
    if (!engine.config().isPrefixCaching() || "transferred".equals(kv) || blocks == null) {
      return;
    }
    int through = req.promptTokens - seq.prefillLeft + tokens;
    int full = Math.min(Math.min(hashes.length, blocks.length), through / engine.config().getBlockSize());
    for (int i = 0; i < full; i++) {
      engine.blocks().register(blocks[i], hashes[i]);
    }
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
    deferring = true;
    engine.counters().deferred.incrementAndGet();
    return engine.puller().pull(req.kvParams).compose(result -> result.outcome() == KvPuller.Outcome.TRANSFERRED
      ? delay(engine.config().getKvTransferPerBlockMs() * pulledBlocks(result)).map(result)
      : Future.succeededFuture(result)).andThen(ar -> undefer());
  }

  /** Its KV has arrived (or will not): it waits for capacity now, no longer for the transfer. Idempotent. */
  private void undefer() {
    if (deferring) {
      deferring = false;
      engine.counters().deferred.decrementAndGet();
    }
  }

  /** Remote blocks actually read: those past the prefix this engine already caches. */
  private int pulledBlocks(KvPuller.Result result) {
    return Math.max(0, result.blocks() - cachedBlocks);
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
        engine.log().update(logEntry, "kv_pulled_blocks", pulledBlocks(result));
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

  /**
   * Joins the engine's batch: the prompt past the cached prefix (none after a KV transfer) is prefilled, then one
   * token per step until {@code limit} (fewer than the answer's under an output-cutting fault); completes when the
   * last is written.
   */
  private Future<Void> generate() {
    int total = answer.deltas().size();
    limit = total;
    if (kind == InjectedFault.DONE_BEFORE_OUTPUT) {
      limit = 0;
    } else if (kind == InjectedFault.CLOSE_BEFORE_DONE || kind == InjectedFault.SILENCE_AFTER
      || kind == InjectedFault.ERROR_IN_STREAM || kind == InjectedFault.RESET) {
      limit = Math.min(total, fault.intParam("after", 0));
    }
    if ("transferred".equals(kv)) {
      cachedTokens = Math.max(cachedTokens, req.promptTokens - 1);
    }
    generated = Promise.promise();
    seq = new BatchScheduler.Sequence(this, "transferred".equals(kv) ? 0 : req.promptTokens - cachedBlocks * engine.config().getBlockSize(), limit);
    engine.scheduler().submit(seq);
    return generated.future();
  }

  @Override
  public void admitted() {
    markRunning();
    scheduled();
  }

  @Override
  public void prefilled() {
    if (closed) {
      return;
    }
    engine.counters().ttft.observe((System.nanoTime() - arrivedNanos) / 1e9);
    if (!"prefill".equals(req.phase)) {
      registerPromptBlocks();
    }
    engine.log().update(logEntry, "cached_tokens", cachedTokens);
    engine.log().update(logEntry, "prefill_steps", seq.prefillSteps());
    engine.log().update(logEntry, "sim_ttft_ms", seq.ttftMs());
    if (limit == 0) {
      generated.tryComplete();
    }
  }

  @Override
  public void token() {
    if (closed) {
      generated.tryFail(HALT);
      return;
    }
    writeToken(emitted++);
    if (emitted >= limit) {
      generated.tryComplete();
      return;
    }
    if (sse != null && sse.queueFull()) {
      seq.paused = true;
      response.drainHandler(v -> engine.scheduler().resume(seq));
    } else if (kind == InjectedFault.SLOW_TOKENS) {
      pace(Math.round(fault.doubleParam("itl_ms", 0)));
    }
  }

  /** {@code slow_tokens}: the next token comes {@code itl_ms} after this one, with heartbeats meanwhile if asked. */
  private void pace(long itl) {
    if (itl <= 0) {
      return;
    }
    seq.paused = true;
    long keepalive = Math.round(fault.doubleParam("keepalive_ms", 0));
    if (keepalive > 0) keepAlive(System.nanoTime() + itl * 1_000_000, keepalive);
    timer(itl, () -> engine.scheduler().resume(seq));
  }

  /** The prompt's full blocks join this engine's prefix cache (computed here, or pulled through a handoff). */
  private void registerPromptBlocks() {
    for (int i = 0; i < hashes.length && blocks != null && i < blocks.length; i++) {
      engine.blocks().register(blocks[i], hashes[i]);
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
      JsonObject body = withCachedTokens(ResponseShapes.full(req, created, answer, descriptor));
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
      sse.frame(withCachedTokens(ResponseShapes.usageChunk(req, created, answer.completionTokens())));
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
    JsonObject descriptor = PrefillHandoff.issue(engine, req, blocks, hashes, fault);
    blocks = null;
    return descriptor;
  }

  /** {@code --enable-prompt-tokens-details}: the usage names the prompt tokens not computed here. */
  private JsonObject withCachedTokens(JsonObject body) {
    return engine.config().isEnablePromptTokensDetails() ? ResponseShapes.withCachedTokens(body, cachedTokens) : body;
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
    undefer();
    if (state == State.WAITING) {
      engine.counters().waiting.decrementAndGet();
    } else if (state == State.RUNNING) {
      engine.counters().running.decrementAndGet();
    }
    if (completed && state != State.DONE) {
      engine.counters().e2e.observe((System.nanoTime() - arrivedNanos) / 1e9);
      if (seq != null) {
        engine.log().update(logEntry, "sim_decode_ms", seq.decodeMs());
      }
    }
    state = State.DONE;
    engine.scheduler().release(seq);
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
