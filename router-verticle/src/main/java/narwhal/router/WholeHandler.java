package narwhal.router;

import io.vertx.core.Handler;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import narwhal.common.config.NarwhalConfig;

import java.time.Instant;

/**
 * The edge of the endpoints an engine runs whole, not disaggregated ({@code /v1/embeddings}, {@code /tokenize},
 * {@code /detokenize}, {@code /v1/responses}; docs/operations.md#several-models): parses the body (a JSON object whose
 * {@code model}, when present, is a string), enforces the replica's {@link Admission} as the inference endpoints do,
 * then hands the request to its {@link WholeRequest}.
 */
final class WholeHandler implements Handler<RoutingContext> {
  static final java.util.List<String> ENDPOINTS = java.util.List.of("/v1/embeddings", "/tokenize", "/detokenize", "/v1/responses");

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
    Instant arrived = rc.get(EdgeRefusal.ARRIVED);
    long arrivedNanos = rc.get(EdgeRefusal.ARRIVED_NANOS);
    ctx.metrics().offered();
    RouterInstance.received(ctx, rc);
    JsonObject body;
    try {
      body = InferenceHandler.parse(rc.body().buffer());
    } catch (DecodeException | ClassCastException e) {
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid(InferenceHandler.bodyFault(e), null), "invalid");
      return;
    }
    Object model = body.getValue("model");
    if (model != null && !(model instanceof String)) {
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("model: expected a string", "model"), "invalid");
      return;
    }
    Object previous = body.getValue("previous_response_id");
    if (previous != null && !(previous instanceof String)) {
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("previous_response_id: expected a string", "previous_response_id"), "invalid");
      return;
    }
    switch (ctx.admission().admit(cfg.serving().maxInFlight())) {
      case OVERLOADED -> {
        EdgeRefusal.refuse(ctx, rc, EdgeError.overloaded(), "rejected");
        return;
      }
      case SHUTTING_DOWN -> {
        rc.response().putHeader("connection", "close");
        EdgeRefusal.refuse(ctx, rc, EdgeError.shuttingDown(), "rejected");
        return;
      }
      case ADMITTED -> { }
    }
    InferenceRequest request = new InferenceRequest(rc.get(RouterInstance.RID), rc.request().getHeader("x-request-id"), endpoint,
        false, body, Boolean.TRUE.equals(body.getValue("stream")), rc.response(), arrived, arrivedNanos, null,
        model instanceof String named ? named : cfg.model());
    new WholeRequest(ctx, owners, request, (String) previous, ctx.admission()::finished).start();
  }
}
