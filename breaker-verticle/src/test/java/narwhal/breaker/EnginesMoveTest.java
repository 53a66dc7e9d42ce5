package narwhal.breaker;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import narwhal.sim.SimEngine;
import narwhal.sim.SimFleet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The breaker verticle over real simulated engines while the fleet file moves (issue 41): reloads do not restart the
 * readmission count, and an engine a reload adds is checked at once and serves as soon as its checks pass.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class EnginesMoveTest {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);

  private static NarwhalConfig config(List<SimEngine> engines, JsonObject recovery) {
    JsonArray list = new JsonArray();
    engines.forEach(e -> list.add(new JsonObject().put("iid", e.name()).put("url", e.url()).put("role", e.options().getRole())));
    return NarwhalConfig.fromJson(new JsonObject().put("model", BreakerParts.MODEL).put("engines", list)
        .put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", 5).put("health_timeout_s", 2))
        .put("recovery", new JsonObject().put("eject_after", 1).put("liveness_every", 100_000).mergeIn(recovery)));
  }

  private static Future<String> deploy(Vertx vertx, AtomicReference<NarwhalConfig> config) {
    return vertx.deployVerticle(new BreakerVerticle(config::get, new SimpleMeterRegistry(), System::currentTimeMillis,
        name -> null));
  }

  /** Completes when the breaker publishes {@code iid} serving (the state event every router places by). */
  private static Future<Void> serving(Vertx vertx, String iid) {
    io.vertx.core.Promise<Void> seen = io.vertx.core.Promise.promise();
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      if (event != null && iid.equals(event.iid()) && event.state() == EngineState.SERVING) seen.tryComplete();
    });
    return seen.future();
  }

  @Test
  void reloadsMoreOftenThanTheReadmissionIntervalDoNotKeepAnEjectedEngineOut(Vertx vertx, VertxTestContext ctx) {
    BreakerParts.sims(vertx, List.of("P0:prefill", "D0:decode", "D1:decode")).onComplete(ctx.succeeding(fleet -> {
      // readmission every 0.6 s; an unrelated key (the quarantine) changed every 0.2 s
      AtomicReference<NarwhalConfig> config = new AtomicReference<>(
          config(fleet.engines(), new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 3)));
      long[] reloads = {-1};
      vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> {
        EngineStateEvent event = EngineStateEvent.fromJson(m.body());
        if (event == null || !"D1".equals(event.iid()) || event.state() != EngineState.EJECTED || reloads[0] >= 0) return;
        serving(vertx, "D1").onComplete(ctx.succeeding(v -> {
          vertx.cancelTimer(reloads[0]);
          fleet.close().onComplete(ctx.succeedingThenComplete());
        }));
        reloads[0] = vertx.setPeriodic(200, t -> {
          double quarantine = config.get().recovery().failureQuarantineS() == 0 ? 1 : 0;
          config.set(config(fleet.engines(), new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 3)
              .put("failure_quarantine_s", quarantine)));
          vertx.eventBus().send(Addresses.CONFIG_CHANGED, new JsonObject(), LOCAL);
        });
      });
      deploy(vertx, config).onComplete(ctx.succeeding(id -> vertx.eventBus().send(Addresses.BREAKER_OUTCOME,
          new LegOutcome("D1", Phase.DECODE, false, FailureClass.CONNECTION, "connect_error", null, false).toJson(), LOCAL)));
    }));
  }

  @Test
  void anEngineAddedByAReloadIsCheckedAtOnceAndServes(Vertx vertx, VertxTestContext ctx) {
    BreakerParts.sims(vertx, List.of("P0:prefill", "D0:decode", "D1:decode")).onComplete(ctx.succeeding(fleet -> {
      // no readmission round within the test's time: only the check a reload starts can let D1 serve
      JsonObject recovery = new JsonObject().put("readmit_every", 100_000);
      AtomicReference<NarwhalConfig> config = new AtomicReference<>(config(fleet.engines().subList(0, 2), recovery));
      serving(vertx, "D1").onComplete(ctx.succeeding(v -> fleet.close().onComplete(ctx.succeedingThenComplete())));
      deploy(vertx, config).onComplete(ctx.succeeding(id -> {
        config.set(config(fleet.engines(), recovery));
        vertx.eventBus().send(Addresses.CONFIG_CHANGED, new JsonObject(), LOCAL);
      }));
    }));
  }
}
