package narwhal.router;

import io.vertx.core.Handler;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** {@code GET /v1/models}: the union of what serving engines list in their own {@code /v1/models} (placement learns it), as vLLM answers. */
final class ModelsRoute implements Handler<RoutingContext> {
  private final ControlBusClient controlBus;

  ModelsRoute(ControlBusClient controlBus) {
    this.controlBus = controlBus;
  }

  @Override
  public void handle(RoutingContext rc) {
    controlBus.models().onComplete(ar -> rc.json(new JsonObject().put("object", "list")
        .put("data", ar.succeeded() ? ar.result() : new JsonArray())));
  }
}
