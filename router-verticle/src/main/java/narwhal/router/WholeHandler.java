package narwhal.router;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.RequestOutcome;
import narwhal.router.telemetry.RequestTrace;

import java.util.List;

/**
 * The edge of the endpoints an engine runs whole, not disaggregated ({@code /v1/embeddings}, {@code /tokenize},
 * {@code /detokenize}, {@code /v1/responses}; docs/operations.md#several-models): parses the body (a JSON object whose
 * {@code model} and {@code previous_response_id}, when present, are strings), enforces the replica's {@link Admission}
 * as the inference endpoints do ({@link EdgeRefusal#admitted}), then hands the request to its {@link RequestLifecycle}
 * with a {@link WholeLeg}. {@link #stored} serves what vLLM serves of its response store, {@code GET /v1/responses/{id}}
 * and {@code POST /v1/responses/{id}/cancel}, from the engine that answered the response.
 */
final class WholeHandler implements Handler<RoutingContext> {
  static final List<String> ENDPOINTS = List.of("/v1/embeddings", "/tokenize", "/detokenize", "/v1/responses");

  private final RouterContext ctx;
  private final ResponseOwners owners;
  private final String endpoint;

  WholeHandler(RouterContext ctx, ResponseOwners owners, String endpoint) {
    this.ctx = ctx;
    this.owners = owners;
    this.endpoint = endpoint;
  }

  @Override
  public void handle(RoutingContext rc) {
    NarwhalConfig cfg = ctx.config().get();
    JsonObject body = InferenceHandler.received(ctx, rc);
    if (body == null) return;
    Object model = body.getValue("model");
    if (model != null && !(model instanceof String m && !m.isEmpty())) {
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("model: expected a non-empty string", "model"), RequestOutcome.INVALID);
      return;
    }
    Object previous = body.getValue("previous_response_id");
    if (previous != null && !(previous instanceof String)) {
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("previous_response_id: expected a string", "previous_response_id"),
          RequestOutcome.INVALID);
      return;
    }
    Admission.Lane lane = EdgeRefusal.admitted(ctx, rc, body, 1);
    if (lane == null) return;
    String rid = rc.get(RequestKeys.RID);
    String clientRid = rc.request().getHeader("x-request-id");
    long arrivedNanos = rc.get(RequestKeys.ARRIVED_NANOS);
    // only /v1/responses streams: vLLM ignores stream on the others and answers JSON, timed as any JSON answer
    boolean stream = "/v1/responses".equals(endpoint) && Boolean.TRUE.equals(body.getValue("stream"));
    String named = model instanceof String m ? m : cfg.model();
    InferenceRequest request = new InferenceRequest(rid, clientRid, endpoint, false, body, stream, rc.response(),
        rc.get(RequestKeys.ARRIVED), arrivedNanos, null, named, lane);
    RequestTrace trace = !ctx.tracing().enabled() ? RequestTrace.OFF : ctx.tracing().begin(rc.request().headers(),
        new RequestTrace.Start(operation(endpoint), named, rid, clientRid, endpoint, stream, arrivedNanos,
            body.getValue("max_output_tokens")));
    new RequestLifecycle(ctx, request, new WholeLeg(ctx, owners, request, (String) previous), () -> ctx.admission().finished(lane), trace)
        .start();
  }

  /**
   * {@code GET /v1/responses/{response_id}} ({@code cancel} false; its query, {@code stream} and {@code starting_after},
   * passed on) or {@code POST /v1/responses/{response_id}/cancel}: sent, without a body, to the engine that answered the
   * response ({@link ResponseOwners}), never elsewhere; vLLM's 404 when no engine of the fleet is known to have answered
   * it, or its engine is gone. A leg of the request's {@link RequestLifecycle} as any whole request (admission,
   * deadline, breaker evidence, journal row); its answer's {@code usage} is not counted again.
   */
  static Handler<RoutingContext> stored(RouterContext ctx, ResponseOwners owners, boolean cancel) {
    return rc -> {
      ctx.metrics().offered();
      ReceiveGuard.received(ctx, rc);
      String id = rc.pathParam("response_id");
      owners.owner(ctx.vertx(), id).onComplete(ar -> {
        NarwhalConfig cfg = ctx.config().get();
        String owner = ar.succeeded() ? ar.result() : null;
        String model = owner == null ? null : BaseModels.of(cfg, owner);
        if (model == null) {
          EdgeRefusal.refuse(ctx, rc, EdgeError.responseNotFound(id), RequestOutcome.INVALID);
          return;
        }
        Admission.Lane lane = EdgeRefusal.admitted(ctx, rc, new JsonObject(), 1);
        if (lane == null) return;
        String rid = rc.get(RequestKeys.RID);
        String clientRid = rc.request().getHeader("x-request-id");
        long arrivedNanos = rc.get(RequestKeys.ARRIVED_NANOS);
        String path = rc.request().path();
        boolean stream = !cancel && "true".equalsIgnoreCase(rc.request().getParam("stream"));
        String query = rc.request().query();
        WholeLeg.Target target = new WholeLeg.Target(cancel ? HttpMethod.POST : HttpMethod.GET,
            query == null || cancel ? path : path + "?" + query, false);
        InferenceRequest request = new InferenceRequest(rid, clientRid, path, false, new JsonObject(), stream, rc.response(),
            rc.get(RequestKeys.ARRIVED), arrivedNanos, null, model, lane);
        RequestTrace trace = !ctx.tracing().enabled() ? RequestTrace.OFF : ctx.tracing().begin(rc.request().headers(),
            new RequestTrace.Start(cancel ? "cancel_response" : "retrieve_response", model, rid, clientRid,
                rc.request().method().name(), path, stream,
                arrivedNanos, null));
        new RequestLifecycle(ctx, request, new WholeLeg(ctx, owners, request, id, target, owner), () -> ctx.admission().finished(lane), trace)
            .start();
      });
    };
  }

  /** The request span's {@code gen_ai.operation.name}: the OpenTelemetry name where there is one, else the path's. */
  static String operation(String endpoint) {
    return switch (endpoint) {
      case "/v1/embeddings" -> "embeddings";
      case "/v1/responses" -> "chat";
      default -> endpoint.substring(endpoint.lastIndexOf('/') + 1);
    };
  }
}
