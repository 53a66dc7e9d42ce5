package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;

/**
 * The producer's KV side channel (vLLM's NIXL ZMQ handshake and RDMA read, as plain HTTP):
 * {@code POST /kv/pull {"remote_engine_id","remote_request_id","block_ids"}} answers 200 and
 * frees the blocks of a held, unexpired handoff, 404 for an unknown or expired one and 409 when
 * the engine id is not this engine's. {@code GET /kv/handshake} reports the engine's identity.
 */
final class SideChannel {

  private SideChannel() {
  }

  static Router router(Vertx vertx, SimEngine engine) {
    Router router = Router.router(vertx);
    router.post("/kv/pull").handler(BodyHandler.create().setBodyLimit(1 << 20)).handler(ctx -> pull(ctx, engine));
    router.get("/kv/handshake").handler(ctx -> json(ctx, 200, new JsonObject()
      .put("engine_id", engine.engineId())
      .put("block_size", engine.config().getBlockSize())
      .put("num_blocks", engine.config().getTotalBlocks())));
    return router;
  }

  private static void pull(RoutingContext ctx, SimEngine engine) {
    JsonObject body;
    try {
      body = ctx.body().asJsonObject();
    } catch (RuntimeException e) {
      body = null;
    }
    if (body == null) {
      json(ctx, 400, new JsonObject().put("error", "body must be a JSON object"));
      return;
    }
    String engineId = body.getValue("remote_engine_id") instanceof String ? body.getString("remote_engine_id") : null;
    String requestId = body.getValue("remote_request_id") instanceof String ? body.getString("remote_request_id") : null;
    switch (engine.handoffs().pull(engineId, requestId)) {
      case PULLED:
        json(ctx, 200, new JsonObject().put("status", "transferred").put("engine_id", engine.engineId())
          .put("remote_request_id", requestId));
        break;
      case ENGINE_MISMATCH:
        json(ctx, 409, new JsonObject().put("error", "engine id mismatch").put("engine_id", engine.engineId()));
        break;
      default:
        json(ctx, 404, new JsonObject().put("error", "unknown or expired request").put("remote_request_id", requestId));
    }
  }

  private static void json(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.toBuffer());
  }
}
