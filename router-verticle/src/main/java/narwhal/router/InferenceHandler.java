package narwhal.router;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import narwhal.common.config.PlacementConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.RequestOutcome;
import narwhal.engines.json.Utf8;
import narwhal.router.telemetry.RequestTrace;

import java.time.Instant;
import java.util.Optional;

/**
 * The edge of {@code /v1/completions} and {@code /v1/chat/completions}: parses and validates the body, enforces
 * the replica's {@link Admission} ({@link EdgeRefusal#admitted}: the in-flight limit, one count across endpoints and
 * event loops; a stopping replica's refusal), then hands the request to its {@link RequestLifecycle}, which reports its
 * end to the admission.
 * Refusals here are journalled as {@code invalid} or {@code rejected}.
 */
final class InferenceHandler implements Handler<RoutingContext> {
  private final RouterContext ctx;
  private final boolean chat;
  private final String endpoint;

  InferenceHandler(RouterContext ctx, boolean chat) {
    this.ctx = ctx;
    this.chat = chat;
    this.endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  }

  @Override
  public void handle(RoutingContext rc) {
    NarwhalConfig cfg = ctx.config().get();
    String rid = rc.get(RequestKeys.RID);
    String clientRid = rc.request().getHeader("x-request-id");
    Instant arrived = rc.get(RequestKeys.ARRIVED);
    long arrivedNanos = rc.get(RequestKeys.ARRIVED_NANOS);
    JsonObject body = received(ctx, rc);
    if (body == null) return;
    Optional<EdgeError> invalid = RequestValidator.check(body, chat);
    if (invalid.isPresent()) {
      EdgeRefusal.refuse(ctx, rc, invalid.get(), RequestOutcome.INVALID);
      return;
    }
    if ((clientRid == null || clientRid.isEmpty()) && body.getValue("request_id") instanceof String own && !RequestIdBound.accepts(own)) {
      EdgeRefusal.refuse(ctx, rc, RequestIdBound.refusal("request_id", own), RequestOutcome.INVALID);
      return;
    }
    int prompts = chat ? 1 : RequestValidator.batch(body.getValue("prompt"));
    if (prompts > cfg.serving().maxBatchPrompts()) {
      EdgeRefusal.refuse(ctx, rc, tooManyPrompts(prompts, cfg.serving().maxBatchPrompts()), RequestOutcome.INVALID);
      return;
    }
    Admission.Lane lane = EdgeRefusal.admitted(ctx, rc, body, prompts);
    if (lane == null) return;
    body.remove("kv_transfer_params");
    boolean stream = Boolean.TRUE.equals(body.getValue("stream"));
    PlacementConfig placement = ctx.config().get().placement();
    String session = placement.sessionHeader().isEmpty() ? null : rc.request().getHeader(placement.sessionHeader());
    String model = body.getValue("model") instanceof String named ? named : cfg.model();
    InferenceRequest request = new InferenceRequest(rid, clientRid, endpoint, chat, body, stream, rc.response(), arrived, arrivedNanos,
        PromptAffinity.of(body, chat, session, placement), model, lane);
    String answerId = ClientId.answer(chat, ClientId.base(clientRid, body, rid));
    rc.response().putHeader("x-request-id", ClientId.base(clientRid, body, rid));
    if (prompts > 1) {
      for (int i = 1; i < prompts; i++) ctx.metrics().offered();
      new PromptBatch(ctx, request, answerId, body.getJsonArray("prompt"), part -> PromptAffinity.of(part, false, session, placement),
          () -> ctx.admission().finished(lane)).start();
      return;
    }
    ClientSink sink = stream ? new SseRelay(rc.response(), ctx.endOfTurn(), answerId)
        : new JsonAssembler(rc.response(), chat, answerId, model, body.getValue("tool_choice"), arrived.getEpochSecond());
    RequestTrace trace = !ctx.tracing().enabled() ? RequestTrace.OFF : ctx.tracing().begin(rc.request().headers(),
        new RequestTrace.Start(chat ? "chat" : "text_completion", model, rid, clientRid, endpoint, stream, arrivedNanos, body.getValue("max_tokens")));
    new RequestLifecycle(ctx, request, sink, () -> ctx.admission().finished(lane), trace).start();
  }

  /** A completions request batching more prompts than {@code serving.max_batch_prompts}: refused before admission. */
  static EdgeError tooManyPrompts(int prompts, int limit) {
    return EdgeError.invalid("prompt: " + prompts + " prompts in one request, more than serving.max_batch_prompts (" + limit
        + ")", "prompt");
  }

  /**
   * An inference request has arrived whole: it is counted as offered, and its body parsed; null when the body is not a
   * usable JSON object (then refused here as invalid).
   */
  static JsonObject received(RouterContext ctx, RoutingContext rc) {
    ctx.metrics().offered();
    ReceiveGuard.received(ctx, rc);
    try {
      return parse(rc.body().buffer());
    } catch (DecodeException | ClassCastException e) {
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid(bodyFault(e), null), RequestOutcome.INVALID);
      return null;
    }
  }

  /** What the client is told about a body that is not a usable JSON object: a parser limit it went past is named. */
  static String bodyFault(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof StreamConstraintsException limit) {
        StreamReadConstraints max = StreamReadConstraints.defaults();
        String what = String.valueOf(limit.getMessage());
        if (what.startsWith("Document nesting depth")) return "body: JSON nested deeper than " + max.getMaxNestingDepth() + " levels";
        if (what.startsWith("Number value length")) return "body: a JSON number longer than " + max.getMaxNumberLength() + " characters";
        if (what.startsWith("String value length")) return "body: a JSON string longer than " + max.getMaxStringLength() + " characters";
        if (what.startsWith("Name length")) return "body: a JSON field name longer than " + max.getMaxNameLength() + " characters";
        return "body: JSON beyond the parser's limits";
      }
    }
    return "body: expected a JSON object in UTF-8";
  }

  /** The body as a JSON object: strictly UTF-8 (no overlong forms, no encoded surrogates), an object at the top. */
  static JsonObject parse(Buffer buffer) {
    if (buffer == null || buffer.length() == 0) throw new DecodeException("empty body");
    byte[] bytes = buffer.getBytes();
    if (!Utf8.valid(bytes, 0, bytes.length)) throw new DecodeException("not UTF-8");
    if (!(Json.decodeValue(buffer) instanceof JsonObject object)) throw new DecodeException("not an object");
    return object;
  }
}
