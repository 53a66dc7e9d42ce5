package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Failures;
import narwhal.common.bus.LegOutcome;
import narwhal.common.bus.Reservation;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One request an engine runs whole (docs/operations.md#several-models), from admission to its one terminal outcome:
 * placed as a decode leg on an engine of its model (role {@code decode} or {@code both}: such an engine computes its
 * own prefill, as for a same-worker decode), or on the engine that answered its {@code previous_response_id}; the
 * client's body goes there as is and the engine's answer comes back as is (a stream relayed as it arrives, a JSON
 * answer read whole within {@code serving.max_response_bytes}). Deadline, retries before the first byte, breaker
 * evidence, journal row and metrics are those of {@link RequestLifecycle}. Confined to the client connection's loop.
 */
final class WholeRequest implements Admission.Cuttable {
  /** Where a {@code /v1/responses} answer names its id: the object's first {@code id}, or the stream's first event's. */
  private static final Pattern RESPONSE_ID = Pattern.compile("\"id\"\\s*:\\s*\"(resp[^\"]*)\"");
  private static final int ID_SCAN_BYTES = 8192;

  private final RouterContext ctx;
  private final NarwhalConfig cfg;
  private final ResponseOwners owners;
  private final InferenceRequest request;
  private final String previousId;
  private final Runnable onFinish;
  private final HttpServerResponse client;
  private final Set<String> excluded = new HashSet<>();
  private final List<JsonObject> attemptFailures = new ArrayList<>();
  private final Promise<Void> cancelLegs = Promise.promise();
  private final long deadlineNanos;
  private Context context;
  private long deadlineTimer = -1;
  private long backoffTimer = -1;
  private long readTimer = -1;
  private int attempt;
  private boolean dispatched;
  private boolean committed;
  private boolean done;
  /** The engine that answered {@link #previousId}, null when the request names none. */
  private String pinned;
  private Reservation engine;
  private Reservation held;
  private String acceptedModel;
  private long firstByteNanos = -1;
  private long outputBytes;
  private Buffer head = Buffer.buffer();
  private String responseId;
  /** Completes once the engine of {@link #responseId} is recorded for follow-ups: the client's answer ends after it. */
  private Future<Void> ownerRecorded = Future.succeededFuture();
  private JsonObject usage;
  /** The fault of the latest failed attempt: a retry that finds no credit ends the request with it. */
  private EngineFault lastFault;

  WholeRequest(RouterContext ctx, ResponseOwners owners, InferenceRequest request, String previousId, Runnable onFinish) {
    this.ctx = ctx;
    this.cfg = ctx.config().get();
    this.owners = owners;
    this.request = request;
    this.previousId = previousId;
    this.onFinish = onFinish;
    this.client = request.response();
    this.deadlineNanos = request.arrivedNanos() + cfg.serving().requestTimeoutMs() * 1_000_000;
  }

  void start() {
    context = ctx.vertx().getOrCreateContext();
    ctx.admission().track(this);
    deadlineTimer = ctx.vertx().setTimer(Math.max(1, remainingMs()), t -> expire());
    client.closeHandler(v -> cancelled());
    if (previousId == null) {
      runAttempt();
      return;
    }
    owners.owner(ctx.vertx(), previousId).onComplete(ar -> {
      if (done) return;
      pinned = ar.succeeded() ? ar.result() : null;
      if (pinned == null) unknownResponse(); else runAttempt();
    });
  }

  private void runAttempt() {
    if (attempt > 0 && !ctx.retryBudget().trySpend()) {
      // the decision saw a credit; another request spent the last one during the backoff: this retry does not run
      attemptFailures.get(attemptFailures.size() - 1).put("retry_reason", "shared_budget").put("backoff_s", (Object) null);
      ctx.metrics().retryDenied();
      end(lastFault);
      return;
    }
    if (attempt > 0) ctx.metrics().retryAttempt();
    int number = ++attempt;
    reserve().compose(r -> send(r, number)).onComplete(ar -> {
      if (ar.failed()) attemptFailed(number, ar.cause());
    });
  }

  private Future<Reservation> reserve() {
    if (done) return Future.failedFuture(new CancellationException());
    List<String> exclude = new ArrayList<>(excluded);
    if (pinned != null) {
      // the response's state lives on one engine: every other one is out
      for (EngineConfig e : cfg.engines()) if (!e.iid().equals(pinned)) exclude.add(e.iid());
    }
    return ctx.controlBus().reserve(new ReserveRequest(request.rid(), Phase.DECODE, exclude, null, null, request.model()))
        .onSuccess(r -> {
          held = r;
          engine = r;
          if (acceptedModel == null) acceptedModel = request.model();
        });
  }

  private Future<Void> send(Reservation r, int number) {
    dispatched = true;
    ctx.metrics().decodeAttempt();
    long headersMs = request.stream() ? cfg.engine().firstTokenTimeoutMs() : Math.max(1, remainingMs());
    return ctx.engines().whole(r.url(), request.endpoint(), request.body().toBuffer(), request.rid() + "-a" + number + "-whole",
        headersMs, cancelLegs.future()).compose(resp -> relay(r, resp));
  }

  /** The engine's answer to the client: a stream chunk by chunk (committed with the first), any other body whole. */
  private Future<Void> relay(Reservation r, HttpClientResponse resp) {
    if (done) {
      resp.request().reset();
      return Future.succeededFuture();
    }
    String type = resp.getHeader("content-type");
    boolean stream = resp.statusCode() == 200 && type != null && type.startsWith("text/event-stream");
    Promise<Void> end = Promise.promise();
    long maxBytes = cfg.serving().maxResponseBytes();
    Buffer whole = Buffer.buffer();
    resp.handler(chunk -> {
      if (done) return;
      if (stream) {
        if (!committed) {
          committed = true;
          firstByteNanos = System.nanoTime() - request.arrivedNanos();
          client.setStatusCode(200).setChunked(true).putHeader("content-type", type).putHeader("cache-control", "no-cache");
        }
        scan(chunk, r);
        outputBytes += chunk.length();
        client.write(chunk);
        if (client.writeQueueFull()) {
          resp.pause();
          client.drainHandler(v -> resp.resume());
        }
        armReadTimer(end);
      } else if (whole.length() + chunk.length() > maxBytes) {
        end.tryFail(new EngineFault(FaultKind.RESPONSE_TOO_LARGE, Phase.DECODE, "engine response larger than " + maxBytes + " bytes"));
        resp.request().reset();
      } else {
        whole.appendBuffer(chunk);
      }
    });
    resp.exceptionHandler(err -> end.tryFail(err instanceof EngineFault ? err : new EngineFault(FaultKind.CONNECTION_RESET,
        Phase.DECODE, "engine connection failed before a complete response")));
    resp.endHandler(v -> end.tryComplete());
    if (stream) armReadTimer(end);
    resp.resume();
    return end.future().onComplete(ar -> cancelReadTimer()).map(v -> {
      if (!stream) answer(r, resp, whole);
      completed(r, resp.statusCode());
      return null;
    });
  }

  private void answer(Reservation r, HttpClientResponse resp, Buffer body) {
    committed = true;
    firstByteNanos = System.nanoTime() - request.arrivedNanos();
    outputBytes = body.length();
    if (resp.statusCode() == 200) {
      scan(body, r);
      try {
        if (new JsonObject(body).getValue("usage") instanceof JsonObject u) usage = u;
      } catch (RuntimeException notJson) {
        // the answer goes to the client as the engine sent it
      }
    }
    String type = resp.getHeader("content-type");
    client.setStatusCode(resp.statusCode()).putHeader("content-type", type == null ? "application/json" : type);
    ownerRecorded.onComplete(x -> client.end(body));
  }

  /**
   * Finds a {@code /v1/responses} answer's id in its first bytes and records its engine at once: a client may send the
   * follow-up the moment its answer ends, through any replica.
   */
  private void scan(Buffer chunk, Reservation r) {
    if (responseId != null || !"/v1/responses".equals(request.endpoint()) || head.length() >= ID_SCAN_BYTES) return;
    head.appendBuffer(chunk, 0, Math.min(chunk.length(), ID_SCAN_BYTES - head.length()));
    Matcher m = RESPONSE_ID.matcher(head.toString(java.nio.charset.StandardCharsets.UTF_8));
    if (m.find()) {
      responseId = m.group(1);
      head = null;
      ownerRecorded = owners.answered(ctx.vertx(), responseId, r.iid());
    }
  }

  private void armReadTimer(Promise<Void> end) {
    cancelReadTimer();
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

  private void completed(Reservation r, int status) {
    if (done) return;
    if (committed && client.headWritten() && !client.ended()) ownerRecorded.onComplete(x -> {
      if (!client.ended() && !client.closed()) client.end();
    });
    release();
    if (status != 200) {
      // the request's own fault (the engine's 4xx, passed on as is): evidence for nothing
      ctx.metrics().invalid();
      finish("invalid", "engine_rejected", status, null);
      return;
    }
    ctx.controlBus().report(LegOutcome.success(r.iid(), Phase.DECODE));
    ModelMetrics.Model perModel = ctx.models().of(acceptedModel);
    if (usage != null) {
      perModel.usage(usage.containsKey("input_tokens") ? new JsonObject().put("prompt_tokens", usage.getValue("input_tokens"))
          .put("completion_tokens", usage.getValue("output_tokens")) : usage);
    }
    perModel.e2e(System.nanoTime() - request.arrivedNanos());
    ctx.retryBudget().completed();
    ctx.metrics().served(attempt > 1);
    finish("completed", null, 200, null);
  }

  private void attemptFailed(int number, Throwable err) {
    if (done) return;
    Reservation r = engine;
    release();
    if (remainingMs() <= 0) {
      expire();
      return;
    }
    if (err instanceof ReplyException reply) {
      noEngine(reply);
      return;
    }
    EngineFault fault = err instanceof EngineFault f ? f
        : new EngineFault(FaultKind.BAD_RESPONSE, Phase.DECODE, "unexpected router failure: " + err.getMessage());
    if (r != null) {
      excluded.add(r.iid());
      ctx.controlBus().report(new LegOutcome(r.iid(), Phase.DECODE, false, fault.kind().failureClass(), fault.kind().reason(),
          null, fault.kind().quarantines()));
    }
    boolean transientFault = fault.isTransient() && !committed;
    long backoffMs = RetryDecision.backoffMs(ctx.jitter().getAsDouble(), number, cfg.serving().retryBaseMs(), cfg.serving().retryCapMs());
    // a follow-up's state lives on its engine alone: it is never retried elsewhere
    int maxAttempts = pinned != null ? 1 : cfg.serving().maxAttempts();
    String retryReason = RetryDecision.decide(new RetryDecision.Facts(dispatched, committed, number, maxAttempts, transientFault,
        backoffMs, remainingMs(), ctx.retryBudget().available()));
    boolean retry = RetryDecision.ALLOWED.equals(retryReason);
    lastFault = fault;
    attemptFailures.add(new JsonObject().put("attempt", number).put("phase", Phase.DECODE.wireName())
        .put("reason", fault.kind().reason()).put("prefill_iid", null).put("decode_iid", r == null ? null : r.iid())
        .put("status", fault.status()).put("transient", transientFault).put("output_started", committed)
        .put("retry_reason", retryReason).put("backoff_s", retry ? backoffMs / 1000.0 : null).put("error_message", fault.detail()));
    ctx.metrics().attemptFailure(Phase.DECODE.wireName(), fault.kind().reason());
    if (retry) {
      backoffTimer = ctx.vertx().setTimer(Math.max(1, backoffMs), t -> {
        backoffTimer = -1;
        if (!done) runAttempt();
      });
      return;
    }
    if ("shared_budget".equals(retryReason)) ctx.metrics().retryDenied();
    end(fault);
  }

  /** Ends the request with an engine fault: no attempt follows. */
  private void end(EngineFault fault) {
    if (committed) {
      // the stream's status is sent: it ends where it broke, as the engine's own would
      client.reset();
    } else {
      new EdgeError(fault.status(), fault.errorType(), fault.detail(), fault.param(), fault.code(), fault.kind().reason(), false)
          .send(client);
    }
    ctx.metrics().failed(fault.kind().reason());
    finish("failed", fault.kind().reason(), fault.status(), committed ? Phase.DECODE.wireName() : fault.errorType());
  }

  private void noEngine(ReplyException reply) {
    if (reply.failureCode() == Failures.MODEL_NOT_FOUND) {
      refuse(EdgeError.modelNotFound(request.model()));
      return;
    }
    if (pinned != null && reply.failureCode() == Failures.NO_ENGINE && !dispatched) {
      unknownResponse();
      return;
    }
    EdgeError error = reply.failureCode() == Failures.FLEET_HOLD ? EdgeError.standby() : EdgeError.noEngine(dispatched, request.model());
    error.send(client);
    if (dispatched) ctx.metrics().failed(error.reason()); else ctx.metrics().rejected(error.reason());
    finish(dispatched ? "failed" : "rejected", error.reason(), error.status(), error.type());
  }

  /**
   * vLLM's answer for a {@code previous_response_id} it does not hold (serving_responses.py): no engine of this fleet
   * is known to have answered it, or the one that did is gone.
   */
  private void unknownResponse() {
    refuse(new EdgeError(404, "invalid_request_error", "Response with id '" + previousId + "' not found.", "response_id", 404,
        "response_not_found", false));
  }

  private void refuse(EdgeError error) {
    error.send(client);
    ctx.metrics().invalid();
    finish("invalid", error.reason(), error.status(), error.type());
  }

  private void expire() {
    deadlineTimer = -1;
    if (done) return;
    EdgeError error = EdgeError.deadline();
    if (committed) client.reset(); else error.send(client);
    ctx.metrics().expired(error.reason());
    finish("expired", error.reason(), error.status(), error.type());
  }

  @Override
  public void cut() {
    context.runOnContext(v -> {
      if (done) return;
      EdgeError error = EdgeError.graceExpired();
      if (committed) client.reset(); else error.send(client);
      ctx.metrics().failed(error.reason());
      finish("failed", error.reason(), error.status(), error.type());
    });
  }

  private void cancelled() {
    if (done) return;
    ctx.metrics().cancelled();
    finish("cancelled", "client_disconnected", 499, null);
  }

  private void release() {
    if (held != null) ctx.controlBus().release(held);
    held = null;
  }

  private long remainingMs() {
    return (deadlineNanos - System.nanoTime()) / 1_000_000;
  }

  private void finish(String terminal, String reason, int status, String errorType) {
    done = true;
    if (deadlineTimer >= 0) ctx.vertx().cancelTimer(deadlineTimer);
    if (backoffTimer >= 0) ctx.vertx().cancelTimer(backoffTimer);
    cancelReadTimer();
    cancelLegs.tryComplete();
    release();
    if (firstByteNanos >= 0) ctx.metrics().firstByte(firstByteNanos);
    ctx.journal().append(new JsonObject().put("rid", request.rid()).put("client_rid", request.clientRid())
        .put("model", acceptedModel).put("endpoint", request.endpoint())
        .put("arrived", request.arrived().toString()).put("terminal", terminal).put("reason", reason).put("status", status)
        .put("error_type", errorType).put("ttft_s", (Object) null).put("first_byte_s", firstByteNanos < 0 ? null : firstByteNanos / 1e9)
        .put("prefill_iid", (Object) null).put("decode_iid", engine == null ? null : engine.iid())
        .put("prefill_placement", (Object) null).put("decode_placement", engine == null ? null : engine.reason())
        .put("crossed", (Object) null).put("attempts", attempt).put("attempt_failures", new JsonArray(new ArrayList<>(attemptFailures)))
        .put("output_len", outputBytes).put("handoffs_left", 0)
        .put("prompt_tokens", count("prompt_tokens", "input_tokens")).put("completion_tokens", count("completion_tokens", "output_tokens"))
        .put("cached_tokens", (Object) null).put("trace_id", (Object) null)
        .put("duration_s", (System.nanoTime() - request.arrivedNanos()) / 1e9));
    ctx.admission().untrack(this);
    onFinish.run();
  }

  private Integer count(String field, String responsesField) {
    if (usage == null) return null;
    Object n = usage.containsKey(field) ? usage.getValue(field) : usage.getValue(responsesField);
    return n instanceof Number number ? number.intValue() : null;
  }
}
