package narwhal.sim;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * Entry point of {@code POST /v1/completions} and {@code POST /v1/chat/completions}: counts and
 * logs the request, validates it, picks the fault it carries (header {@code x-sim-fault}, body
 * field {@code sim_fault}, then the engine's fault plan) and hands it to an {@link InferenceRun}.
 */
final class CompletionHandler {

  static final String FAULT_HEADER = "x-sim-fault";

  private final SimEngine engine;

  CompletionHandler(SimEngine engine) {
    this.engine = engine;
  }

  void handle(RoutingContext ctx, boolean chat) {
    engine.counters().requests.incrementAndGet();
    engine.counters().requestArrived();
    ctx.addEndHandler(ar -> engine.counters().requestEnded());
    String path = ctx.request().path();
    String headerId = ctx.request().getHeader("x-request-id");
    if (headerId != null) {
      ctx.response().putHeader("x-request-id", headerId);
    }
    JsonObject body = jsonBody(ctx);
    if (body == null) {
      engine.log().record(path, headerId, null, null);
      reject(ctx, ApiError.badRequest("The request body must be a JSON object.", null));
      return;
    }
    CompletionRequest req;
    try {
      req = CompletionRequest.parse(chat, path, body, headerId, engine.config());
    } catch (ApiError e) {
      engine.log().record(path, headerId, phaseOf(body), body.copy());
      reject(ctx, e);
      return;
    }
    JsonObject entry = engine.log().record(path, headerId, req.phase, body.copy());
    engine.log().update(entry, "authorization", ctx.request().getHeader("authorization"));
    engine.log().update(entry, "traceparent", ctx.request().getHeader("traceparent"));
    FaultRule fault;
    try {
      fault = selectFault(ctx, req);
    } catch (IllegalArgumentException e) {
      reject(ctx, ApiError.badRequest("invalid sim fault: " + e.getMessage(), "sim_fault"));
      return;
    }
    if (fault != null) {
      engine.log().update(entry, "fault", fault.kind());
    }
    new InferenceRun(engine, ctx, req, fault, entry).start();
  }

  private FaultRule selectFault(RoutingContext ctx, CompletionRequest req) {
    FaultRule own = null;
    String header = ctx.request().getHeader(FAULT_HEADER);
    if (header != null && !header.isBlank()) {
      own = FaultRule.parse(header);
    } else if (req.simFault instanceof String) {
      own = FaultRule.parse((String) req.simFault);
    } else if (req.simFault instanceof JsonObject) {
      own = new FaultRule((JsonObject) req.simFault);
    }
    if (own != null && own.type().connectionLevel()) {
      throw new IllegalArgumentException(own.kind() + " acts on connections the engine accepts later, not on this request:"
        + " add it with POST /sim/faults");
    }
    if (own != null && own.type() == InjectedFault.HEALTH_503) {
      engine.faults().activateHealth(own);
      own = null;
    }
    if (own != null && own.matchesPhase(req.phase) && own.type().appliesTo(req.phase, req.remotePrefill)) {
      return own;
    }
    return engine.faults().take(req.phase, req.remotePrefill, req.model);
  }

  private static JsonObject jsonBody(RoutingContext ctx) {
    try {
      Object value = ctx.body().asJsonObject();
      return value instanceof JsonObject ? (JsonObject) value : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  private static String phaseOf(JsonObject body) {
    Object kv = body.getValue("kv_transfer_params");
    return kv instanceof JsonObject && Boolean.TRUE.equals(((JsonObject) kv).getValue("do_remote_decode"))
      ? "prefill" : "decode";
  }

  private static void reject(RoutingContext ctx, ApiError error) {
    ctx.response().setStatusCode(error.status).putHeader("content-type", "application/json")
      .end(error.toJson().toBuffer());
  }
}
