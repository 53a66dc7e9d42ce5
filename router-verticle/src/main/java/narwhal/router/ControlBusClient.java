package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.LegOutcome;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.bus.Reservation;
import narwhal.common.bus.ReserveRequest;

/**
 * The router's side of the local control bus: reservations from placement (through the {@link LocalPlacement} table
 * when placement runs on this node, else over the bus), leg outcomes to and state from the breaker.
 */
final class ControlBusClient {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true).setSendTimeout(2_000);

  private final Vertx vertx;
  private final RouterMetrics metrics;

  ControlBusClient(Vertx vertx, RouterMetrics metrics) {
    this.vertx = vertx;
    this.metrics = metrics;
    LegOutcome.CODEC.registerOn(vertx.eventBus());
  }

  /** Fails with the placement's {@code ReplyException} (e.g. {@code NO_ENGINE}) when no engine can take the phase. */
  Future<Reservation> reserve(ReserveRequest request) {
    LocalPlacement local = LocalPlacement.of(vertx);
    Future<Reservation> reserved = local != null ? local.reserve(request)
        : vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE, request.toJson(), LOCAL).map(msg -> Reservation.fromJson(msg.body()));
    return reserved.onSuccess(r -> {
      metrics.resident(r.iid(), r.phase(), 1);
      metrics.placed(r.phase(), r.reason());
    });
  }

  void release(Reservation reservation) {
    metrics.resident(reservation.iid(), reservation.phase(), -1);
    LocalPlacement local = LocalPlacement.of(vertx);
    if (local != null) {
      local.release(reservation);
    } else {
      vertx.eventBus().send(Addresses.PLACEMENT_RELEASE, new JsonObject().put("id", reservation.id()), LOCAL);
    }
  }

  /** Tells placement engine {@code iid} no longer serves the adapter (or alias) {@code model}. */
  void unlist(String iid, String model) {
    vertx.eventBus().send(Addresses.PLACEMENT_UNLIST, new JsonObject().put("iid", iid).put("model", model), LOCAL);
  }

  void report(LegOutcome outcome) {
    vertx.eventBus().send(Addresses.BREAKER_OUTCOME, outcome, LOCAL);
  }

  /** The breaker's view (states, causes, streaks); fails when no breaker runs here. */
  Future<JsonObject> breakerState() {
    return vertx.eventBus().<JsonObject>request(Addresses.BREAKER_STATE, new JsonObject(), LOCAL).map(msg -> msg.body());
  }

  /** The model cards serving engines list, each id once. */
  Future<io.vertx.core.json.JsonArray> models() {
    return vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_MODELS, new JsonObject(), LOCAL)
        .map(msg -> msg.body().getJsonArray("data", new io.vertx.core.json.JsonArray()));
  }

  Future<JsonObject> state() {
    return vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL).map(msg -> msg.body());
  }
}
