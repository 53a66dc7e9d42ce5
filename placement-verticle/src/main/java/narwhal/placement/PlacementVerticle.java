package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.Failures;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.bus.SharedState;
import narwhal.common.config.EngineConfig;

import java.util.HashSet;
import java.util.List;

/**
 * Answers "which engine for this phase of this request" on the local bus and keeps per-engine reservations
 * per phase. Engine states arrive as fleet-change messages; no network call sits on the request path.
 * In: {@link Addresses#PLACEMENT_RESERVE}, {@link Addresses#PLACEMENT_RELEASE}, {@link Addresses#PLACEMENT_STATE},
 * {@link Addresses#FLEET_CHANGED}.
 */
public final class PlacementVerticle extends VerticleBase {
  private final PlacementTable table;
  private boolean fleetHold;

  public PlacementVerticle(List<EngineConfig> engines) {
    this.table = new PlacementTable(engines);
  }

  @Override
  public Future<?> start() {
    List<MessageConsumer<JsonObject>> consumers = List.of(
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_RESERVE, this::reserve),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_RELEASE, msg -> table.release(msg.body().getString("id"))),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_STATE, msg -> msg.reply(snapshot())),
        vertx.eventBus().consumer(Addresses.FLEET_CHANGED, this::fleetChanged));
    return Future.all(consumers.stream().map(MessageConsumer::completion).toList())
        .compose(v -> vertx.sharedData().<String, String>getAsyncMap(SharedState.ENGINE_STATE_MAP))
        .compose(AsyncMap::entries)
        .onSuccess(entries -> entries.values().forEach(text -> apply(new JsonObject(text))));
  }

  private void reserve(Message<JsonObject> msg) {
    ReserveRequest request;
    try {
      request = ReserveRequest.fromJson(msg.body());
    } catch (RuntimeException e) {
      msg.fail(Failures.BAD_MESSAGE, "malformed reserve request: " + e.getMessage());
      return;
    }
    if (fleetHold) {
      msg.fail(Failures.FLEET_HOLD, "FLEET_HOLD: the fleet is held for a whole-wave restart");
      return;
    }
    table.reserve(request.phase(), new HashSet<>(request.exclude()), request.avoid()).ifPresentOrElse(
        reservation -> msg.reply(reservation.toJson()),
        () -> msg.fail(Failures.NO_ENGINE, "NO_ENGINE: no engine can take the " + request.phase().wireName() + " phase"));
  }

  private void fleetChanged(Message<JsonObject> msg) {
    apply(msg.body());
  }

  private void apply(JsonObject body) {
    if (body.getValue("fleet_hold") instanceof Boolean hold) fleetHold = hold;
    if (body.getValue("iid") instanceof String iid && body.getValue("state") instanceof String state) {
      table.setState(iid, EngineState.parse(state));
    }
  }

  private JsonObject snapshot() {
    JsonArray engines = new JsonArray();
    for (PlacementTable.EngineView e : table.view()) {
      engines.add(new JsonObject().put("iid", e.iid()).put("role", e.role().wireName()).put("state", e.state().wireName())
          .put("reservations", new JsonObject().put("prefill", e.prefillReserved()).put("decode", e.decodeReserved())));
    }
    JsonObject snapshot = new JsonObject().put("engines", engines).put("reservations", table.totalReservations());
    if (fleetHold) return snapshot.put("ready", false).put("reason", "the fleet is held for a whole-wave restart");
    table.unplaceablePhase().ifPresentOrElse(
        phase -> snapshot.put("ready", false).put("reason", "no serving engine can take the " + phase + " phase"),
        () -> snapshot.put("ready", true));
    return snapshot;
  }
}
