package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The inference port's HTTP surface: vLLM's OpenAI-compatible and lifecycle endpoints
 * ({@code /v1/*}, {@code /health}, {@code /ping}, {@code /version}, {@code /metrics}), the
 * engine's {@code /attestation}, and the simulator's control API under {@code /sim/}.
 */
final class EngineRoutes {

  static final long MAX_BODY_BYTES = 32L << 20;

  private EngineRoutes() {
  }

  static Router router(Vertx vertx, SimEngine engine) {
    CompletionHandler inference = new CompletionHandler(engine);
    Router router = Router.router(vertx);
    router.get("/metrics").handler(ctx -> {
      engine.counters().metricsRead();
      ctx.next();
    });
    router.get("/health").handler(ctx -> counted(ctx, engine.counters().healthReads));
    router.get("/v1/models").handler(ctx -> counted(ctx, engine.counters().modelsReads));
    router.route().handler(ctx -> {
      if (engine.shuttingDown()) json(ctx, 503, ApiError.envelope("server is shutting down", "Service Unavailable", null, 503));
      else ctx.next();
    });
    router.route("/v1/*").handler(ctx -> authorize(ctx, engine));
    router.post("/v1/completions").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES))
      .handler(ctx -> inference.handle(ctx, false));
    router.post("/v1/chat/completions").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES))
      .handler(ctx -> inference.handle(ctx, true));
    router.get("/v1/models").handler(ctx -> json(ctx, 200, models(engine)));
    WholeRoutes whole = new WholeRoutes(engine);
    router.post("/tokenize").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES))
      .handler(ctx -> {
        whole.remember(ctx);
        TokenizeRoute.handle(ctx, engine);
      });
    router.post("/detokenize").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES)).handler(whole::detokenize);
    router.post("/v1/embeddings").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES)).handler(whole::embeddings);
    router.post("/v1/responses").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES)).handler(whole::responses);
    router.get("/v1/responses/:response_id").handler(whole::retrieve);
    router.post("/v1/responses/:response_id/cancel").handler(BodyHandler.create().setBodyLimit(MAX_BODY_BYTES)).handler(whole::cancel);
    router.get("/health").handler(ctx -> health(ctx, engine));
    router.get("/ping").handler(ctx -> health(ctx, engine));
    router.post("/ping").handler(ctx -> health(ctx, engine));
    router.get("/version").handler(ctx -> json(ctx, 200, new JsonObject().put("version", engine.config().getVersion())));
    router.get("/metrics").handler(ctx -> ctx.response()
      .putHeader("content-type", "text/plain; version=0.0.4; charset=utf-8")
      .end(MetricsText.render(engine)));
    router.get("/attestation").handler(ctx -> json(ctx, 200, engine.attestation()));

    router.post("/sim/faults").handler(BodyHandler.create().setBodyLimit(1 << 20)).handler(ctx -> addFaults(ctx, engine));
    router.get("/sim/faults").handler(ctx -> json(ctx, 200, faultList(engine)));
    router.delete("/sim/faults").handler(ctx -> {
      engine.faults().clear();
      json(ctx, 200, faultList(engine));
    });
    router.get("/sim/requests").handler(ctx -> json(ctx, 200, engine.log().toJson()));
    router.delete("/sim/requests").handler(ctx -> {
      engine.clearRequests();
      json(ctx, 200, new JsonArray());
    });
    router.get("/sim/stats").handler(ctx -> json(ctx, 200, engine.stats()));
    router.post("/sim/stats/mark").handler(ctx -> {
      engine.markMetricsReads();
      json(ctx, 200, engine.stats());
    });
    router.post("/sim/slowdown").handler(BodyHandler.create().setBodyLimit(1 << 10)).handler(ctx -> slowDown(ctx, engine));

    router.errorHandler(404, ctx -> json(ctx, 404, new JsonObject().put("detail", "Not Found")));
    router.errorHandler(405, ctx -> json(ctx, 405, new JsonObject().put("detail", "Method Not Allowed")));
    router.errorHandler(413, ctx -> json(ctx, 413, ApiError.envelope("Request body too large", "Request Entity Too Large", null, 413)));
    router.errorHandler(500, ctx -> json(ctx, 500, ApiError.internal().toJson()));
    return router;
  }

  /** Counts a read before anything answers it (a 503 while shutting down, a 401 for a missing key count too). */
  private static void counted(RoutingContext ctx, AtomicLong reads) {
    reads.incrementAndGet();
    ctx.next();
  }

  /**
   * vLLM's {@code --api-key}: a {@code /v1/*} request without {@code Authorization: Bearer <key>} gets 401
   * {@code {"error": "Unauthorized"}} (its authentication middleware's answer); counted as {@code unauthorized}.
   */
  private static void authorize(RoutingContext ctx, SimEngine engine) {
    String key = engine.config().getApiKey();
    if (key.isEmpty() || ("Bearer " + key).equals(ctx.request().getHeader("authorization"))) {
      ctx.next();
      return;
    }
    engine.counters().unauthorized.incrementAndGet();
    json(ctx, 401, new JsonObject().put("error", "Unauthorized"));
  }

  private static void health(RoutingContext ctx, SimEngine engine) {
    ctx.response().setStatusCode(engine.faults().healthDown() ? 503 : 200).end();
  }

  /** {@code {"factor": F}}: every later step costs F times the latency model's (1 to 1000; 1 restores it). */
  private static void slowDown(RoutingContext ctx, SimEngine engine) {
    Object factor;
    try {
      factor = ctx.body().asJsonObject().getValue("factor");
    } catch (RuntimeException e) {
      factor = null;
    }
    try {
      if (!(factor instanceof Number n)) throw new IllegalArgumentException("body must be {\"factor\": a number from 1 to 1000}");
      engine.slowDown(n.doubleValue());
      json(ctx, 200, new JsonObject().put("factor", engine.slowdown()));
    } catch (IllegalArgumentException e) {
      json(ctx, 400, ApiError.badRequest(e.getMessage(), "factor").toJson());
    }
  }

  private static void addFaults(RoutingContext ctx, SimEngine engine) {
    Object body;
    try {
      body = ctx.body().buffer() == null ? null : io.vertx.core.json.Json.decodeValue(ctx.body().buffer());
    } catch (RuntimeException e) {
      body = null;
    }
    JsonArray rules = body instanceof JsonObject ? new JsonArray().add(body)
      : body instanceof JsonArray ? (JsonArray) body : null;
    if (rules == null) {
      json(ctx, 400, ApiError.badRequest("body must be a fault rule object or an array of them", null).toJson());
      return;
    }
    try {
      for (Object rule : rules) {
        if (!(rule instanceof JsonObject)) {
          throw new IllegalArgumentException("each fault rule must be an object, got " + rule);
        }
        new FaultRule((JsonObject) rule);
      }
    } catch (IllegalArgumentException e) {
      json(ctx, 400, ApiError.badRequest(e.getMessage(), null).toJson());
      return;
    }
    rules.forEach(rule -> engine.faults().add((JsonObject) rule));
    json(ctx, 200, faultList(engine));
  }

  private static JsonArray faultList(SimEngine engine) {
    JsonArray out = new JsonArray();
    engine.faults().list().forEach(rule -> out.add(rule.toJson()));
    return out;
  }

  /**
   * vLLM's model list (serving_models.py): a card per served name (root: the model, with {@code max_model_len}), then a
   * card per LoRA adapter (root: its path, parent: the first served name).
   */
  private static JsonObject models(SimEngine engine) {
    SimEngineOptions options = engine.config();
    long now = engine.clock().instant().getEpochSecond();
    JsonArray data = new JsonArray();
    for (String name : options.servedNames()) {
      data.add(card(name, options.getModel(), null, options.getMaxModelLen(), now));
    }
    options.getLoraModules().forEach((name, path) -> data.add(card(name, path, options.servedNames().get(0), null, now)));
    return new JsonObject().put("object", "list").put("data", data);
  }

  private static JsonObject card(String id, String root, String parent, Integer maxModelLen, long now) {
    JsonObject permission = new JsonObject()
      .put("id", "modelperm-" + UUID.randomUUID().toString().replace("-", ""))
      .put("object", "model_permission")
      .put("created", now)
      .put("allow_create_engine", false)
      .put("allow_sampling", true)
      .put("allow_logprobs", true)
      .put("allow_search_indices", false)
      .put("allow_view", true)
      .put("allow_fine_tuning", false)
      .put("organization", "*")
      .put("group", null)
      .put("is_blocking", false);
    return new JsonObject()
      .put("id", id)
      .put("object", "model")
      .put("created", now)
      .put("owned_by", "vllm")
      .put("root", root)
      .put("parent", parent)
      .put("max_model_len", maxModelLen)
      .put("permission", new JsonArray().add(permission));
  }

  private static void json(RoutingContext ctx, int status, Object body) {
    String encoded = body instanceof JsonObject ? ((JsonObject) body).encode() : ((JsonArray) body).encode();
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(encoded);
  }
}
