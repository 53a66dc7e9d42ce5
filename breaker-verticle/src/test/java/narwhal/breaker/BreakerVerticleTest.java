package narwhal.breaker;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.Counter;
import io.vertx.core.shareddata.SharedData;
import io.vertx.junit5.Checkpoint;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.Failures;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.reflect.Proxy;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The breaker verticle alone on a real event bus (no router): leg outcomes in, versioned state events, streak events
 * and journal events out; admin commands with their token; and the shared-state guard opening when every shared-state
 * operation fails, the replica still ejecting on its own book.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BreakerVerticleTest {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);
  private static final String TOKEN = "t0k3n";

  private static NarwhalConfig config() {
    JsonArray engines = new JsonArray();
    for (String spec : new String[] {"P0:prefill", "D0:decode", "D1:decode"}) {
      String[] p = spec.split(":");
      engines.add(new JsonObject().put("iid", p[0]).put("url", "http://127.0.0.1:9/" + p[0]).put("role", p[1]));
    }
    return NarwhalConfig.fromJson(new JsonObject().put("model", "m").put("engines", engines)
        .put("recovery", new JsonObject().put("eject_after", 2).put("readmit_every", 100_000).put("liveness_every", 100_000))
        .put("cluster", new JsonObject().put("shared_state", new JsonObject().put("operation_timeout_s", 0.05)
            .put("failure_threshold", 1).put("reset_timeout_s", 60))));
  }

  private static Future<String> deploy(Vertx vertx, UnaryOperator<SharedData> sharedData) {
    NarwhalConfig cfg = config();
    return vertx.deployVerticle(new BreakerVerticle(() -> cfg, new SimpleMeterRegistry(), System::currentTimeMillis,
        name -> "NARWHAL_ADMIN_TOKEN".equals(name) ? TOKEN : null, sharedData));
  }

  private static void connectionFailure(Vertx vertx, String iid) {
    vertx.eventBus().send(Addresses.BREAKER_OUTCOME,
        new LegOutcome(iid, Phase.DECODE, false, FailureClass.CONNECTION, "connect_error", null, false).toJson(), LOCAL);
  }

  @Test
  void outcomesEjectAndEveryChangeIsPublishedAndJournaled(Vertx vertx, VertxTestContext ctx) {
    Checkpoint streaks = ctx.checkpoint(3);
    java.util.List<Integer> seen = new java.util.ArrayList<>();
    Checkpoint ejected = ctx.checkpoint();
    Checkpoint journaled = ctx.checkpoint();
    vertx.eventBus().<JsonObject>consumer(Addresses.STREAK_CHANGED, m -> ctx.verify(() -> {
      assertEquals("D0", m.body().getString("iid"));
      seen.add(m.body().getInteger("streak"));
      assertEquals(java.util.List.of(1, 2, 0).subList(0, seen.size()), seen, "counted, counted, reset by the verdict");
      streaks.flag();
    }));
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> ctx.verify(() -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      assertNotNull(event, "a versioned engine-state event: " + m.body());
      assertEquals(EngineState.EJECTED, event.state());
      assertEquals("connection", event.cause());
      ejected.flag();
    }));
    vertx.eventBus().<JsonObject>consumer(Addresses.JOURNAL_EVENT, m -> ctx.verify(() -> {
      if ("cluster_start".equals(m.body().getString("event"))) {
        assertEquals("fleet_file", m.body().getString("from"), "an empty cluster started from the fleet file, without a decisions file");
        m.reply(null);
        return;
      }
      assertEquals("engine_state", m.body().getString("event"));
      assertEquals("ejected", m.body().getString("to"));
      journaled.flag();
    }));
    deploy(vertx, UnaryOperator.identity()).onComplete(ctx.succeeding(id -> {
      connectionFailure(vertx, "D0");
      connectionFailure(vertx, "D0");
    }));
  }

  @Test
  void adminCommandsNeedTheTokenExceptState(Vertx vertx, VertxTestContext ctx) {
    JsonObject eject = new JsonObject().put("command", "eject").put("args", new JsonObject().put("iid", "D1"));
    deploy(vertx, UnaryOperator.identity())
        .compose(id -> vertx.eventBus().<JsonObject>request(Addresses.ADMIN, new JsonObject().put("command", "state")))
        .compose(state -> {
          ctx.verify(() -> assertEquals("closed", state.body().getString("shared_state")));
          return vertx.eventBus().request(Addresses.ADMIN, eject).transform(ar -> Future.succeededFuture(ar.cause()));
        })
        .compose(refused -> {
          ctx.verify(() -> assertEquals(Failures.UNAUTHORIZED, assertInstanceOf(ReplyException.class, refused).failureCode()));
          return vertx.eventBus().<JsonObject>request(Addresses.ADMIN, eject, new DeliveryOptions().addHeader("token", TOKEN));
        })
        .onComplete(ctx.succeeding(reply -> ctx.verify(() -> {
          JsonObject d1 = reply.body().getJsonArray("engines").stream().map(JsonObject.class::cast)
              .filter(e -> "D1".equals(e.getString("iid"))).findFirst().orElseThrow();
          assertEquals("ejected", d1.getString("state"));
          assertEquals("admin", d1.getString("cause"));
          ctx.completeNow();
        })));
  }

  @Test
  void withTheSharedStateFailingTheGuardOpensAndTheReplicaStillEjects(Vertx vertx, VertxTestContext ctx) {
    Checkpoint opened = ctx.checkpoint();
    Checkpoint ejectedLocally = ctx.checkpoint();
    vertx.eventBus().<JsonObject>consumer(Addresses.JOURNAL_EVENT, m -> {
      if ("shared_state_breaker".equals(m.body().getString("event")) && "open".equals(m.body().getString("state"))) opened.flag();
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> ctx.verify(() -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      if (event != null && event.state() == EngineState.EJECTED && "D0".equals(event.iid())) ejectedLocally.flag();
    }));
    boolean[] failing = {false};
    deploy(vertx, real -> failing(real, failing)).onComplete(ctx.succeeding(id -> {
      failing[0] = true;
      connectionFailure(vertx, "D0");
      connectionFailure(vertx, "D0");
    }));
  }

  /** The real shared data, with every operation (on it and on the maps and counters it handed out) failing once {@code failing[0]} is set. */
  private static SharedData failing(SharedData real, boolean[] failing) {
    return proxy(SharedData.class, real, failing);
  }

  @SuppressWarnings("unchecked")
  private static <T> T proxy(Class<T> type, T real, boolean[] failing) {
    return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (self, method, args) -> {
      if (failing[0] && Future.class.isAssignableFrom(method.getReturnType())) return Future.failedFuture("shared state unreachable");
      Object result = method.invoke(real, args);
      return result instanceof Future<?> future ? future.map(v -> v instanceof AsyncMap<?, ?> m ? proxy(AsyncMap.class, m, failing)
          : v instanceof Counter c ? proxy(Counter.class, c, failing) : v) : result;
    });
  }
}
