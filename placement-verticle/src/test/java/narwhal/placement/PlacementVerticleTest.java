package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.Failures;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.bus.Reservation;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The placement verticle alone on a real event bus: reservations (over the bus and through the node-local table),
 * the one version rule for fleet changes, the fleet hold, stopping.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class PlacementVerticleTest {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);
  private static final List<EngineConfig> FLEET = List.of(
      new EngineConfig("P0", "http://127.0.0.1:9/P0", Role.PREFILL, "", ""),
      new EngineConfig("D0", "http://127.0.0.1:9/D0", Role.DECODE, "", ""));

  @BeforeEach
  void deploy(Vertx vertx, VertxTestContext ctx) {
    vertx.deployVerticle(new PlacementVerticle(FLEET, 60_000)).onComplete(ctx.succeedingThenComplete());
  }

  private static Future<String> reserve(Vertx vertx, Phase phase) {
    return vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE,
        new ReserveRequest("r-" + System.nanoTime(), phase, List.of(), null).toJson(), LOCAL).map(m -> m.body().getString("iid"));
  }

  private static void publish(Vertx vertx, JsonObject event) {
    vertx.eventBus().publish(Addresses.FLEET_CHANGED, event);
  }

  @Test
  void theNewestVersionOfAnEngineStateWinsWhateverTheOrder(Vertx vertx, VertxTestContext ctx) {
    EngineStateEvent ejected = new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, 2_000, "a");
    EngineStateEvent olderServing = new EngineStateEvent("D0", EngineState.SERVING, "admin", 0, null, 1_000, "z");
    EngineStateEvent newerServing = new EngineStateEvent("D0", EngineState.SERVING, "admin", 0, null, 2_000, "b");
    reserve(vertx, Phase.DECODE)
        .compose(iid -> {
          ctx.verify(() -> assertEquals("D0", iid));
          publish(vertx, ejected.toJson());
          publish(vertx, olderServing.toJson());
          return reserve(vertx, Phase.DECODE).transform(ar -> Future.succeededFuture(ar.cause()));
        })
        .compose(refused -> {
          ctx.verify(() -> assertEquals(Failures.NO_ENGINE, assertInstanceOf(ReplyException.class, refused).failureCode(),
              "an older serving version does not undo the ejection"));
          publish(vertx, newerServing.toJson());
          return reserve(vertx, Phase.DECODE);
        })
        .onComplete(ctx.succeeding(iid -> ctx.verify(() -> {
          assertEquals("D0", iid, "the same instant from a greater origin is newer");
          ctx.completeNow();
        })));
  }

  @Test
  void aFleetHoldRefusesEveryReservationAndShowsInTheState(Vertx vertx, VertxTestContext ctx) {
    publish(vertx, new FleetHoldEvent(true, 5_000, "a").toJson());
    publish(vertx, new FleetHoldEvent(false, 4_000, "b").toJson());
    reserve(vertx, Phase.PREFILL).transform(ar -> Future.succeededFuture(ar.cause()))
        .compose(refused -> {
          ctx.verify(() -> assertEquals(Failures.FLEET_HOLD, assertInstanceOf(ReplyException.class, refused).failureCode()));
          return vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL);
        })
        .onComplete(ctx.succeeding(state -> ctx.verify(() -> {
          assertFalse(state.body().getBoolean("ready"));
          assertEquals("the fleet is held for a whole-wave restart", state.body().getString("reason"));
          ctx.completeNow();
        })));
  }

  @Test
  void routersOnTheNodeReserveThroughTheSameTableWithoutTheBus(Vertx vertx, VertxTestContext ctx) {
    LocalPlacement local = LocalPlacement.of(vertx);
    ctx.verify(() -> assertNotNull(local, "a running placement publishes its table on the node"));
    Reservation first = local.reserve(new ReserveRequest("r1", Phase.DECODE, List.of(), null)).result();
    ctx.verify(() -> assertEquals("D0", first.iid()));
    vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL)
        .compose(state -> {
          ctx.verify(() -> assertEquals(1, state.body().getInteger("reservations"), "the bus sees the local reservation"));
          local.release(first);
          publish(vertx, new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, 2_000, "a").toJson());
          return vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL);
        })
        .compose(state -> {
          ctx.verify(() -> {
            assertEquals(0, state.body().getInteger("reservations"), "released through the local table");
            Throwable refused = local.reserve(new ReserveRequest("r2", Phase.DECODE, List.of(), null)).cause();
            assertEquals(Failures.NO_ENGINE, assertInstanceOf(ReplyException.class, refused).failureCode(),
                "a state event on the bus reaches the local decision");
            publish(vertx, new FleetHoldEvent(true, 5_000, "a").toJson());
          });
          return vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL);
        })
        .compose(state -> {
          ctx.verify(() -> {
            Throwable held = local.reserve(new ReserveRequest("r3", Phase.PREFILL, List.of(), null)).cause();
            assertEquals(Failures.FLEET_HOLD, assertInstanceOf(ReplyException.class, held).failureCode());
          });
          return vertx.undeploy(vertx.deploymentIDs().iterator().next());
        })
        .onComplete(ctx.succeeding(v -> ctx.verify(() -> {
          assertNull(LocalPlacement.of(vertx), "a stopped placement's table is withdrawn");
          ctx.completeNow();
        })));
  }
}
