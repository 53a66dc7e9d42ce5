package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.SharedData;
import io.vertx.junit5.Checkpoint;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.Failures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link AdminHandler} alone, serving {@link Addresses#ADMIN} on a real event bus over real breaker parts: the token
 * (every command but {@code state}), argument checks and the book's refusals as 400s naming why, a reply that comes
 * once the change is in the shared map, {@code reload-config} published to every replica, and a wave restart that
 * validates real simulated engines before it lifts the fleet hold.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AdminHandlerTest {
  private static final String TOKEN = "t0k3n";
  private static final DeliveryOptions WITH_TOKEN = new DeliveryOptions().addHeader("token", TOKEN);
  private final AtomicLong now = new AtomicLong(1_000_000);

  private static BreakerParts serve(Vertx vertx, BreakerParts parts) {
    vertx.eventBus().<JsonObject>consumer(Addresses.ADMIN, parts.admin::handle);
    return parts;
  }

  private static JsonObject command(String name, JsonObject args) {
    return new JsonObject().put("command", name).put("args", args);
  }

  private static JsonObject iid(String iid) {
    return new JsonObject().put("iid", iid);
  }

  /** The failure of an admin request: its code and message. */
  private static Future<ReplyException> refusal(Vertx vertx, JsonObject command, DeliveryOptions options) {
    return vertx.eventBus().request(Addresses.ADMIN, command, options)
        .transform(ar -> ar.succeeded() ? Future.failedFuture("accepted: " + ar.result().body())
            : Future.succeededFuture(assertInstanceOf(ReplyException.class, ar.cause())));
  }

  private static JsonObject engine(Message<Object> reply, String iid) {
    return ((JsonObject) reply.body()).getJsonArray("engines").stream().map(JsonObject.class::cast)
        .filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow();
  }

  @Test
  void everyCommandButStateNeedsTheTokenAndARefusalIsCounted(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = serve(vertx, BreakerParts.unreachable(vertx, List.of("P0:prefill", "D0:decode", "D1:decode"),
        new JsonObject(), now, TOKEN));
    vertx.eventBus().request(Addresses.ADMIN, command("state", new JsonObject()))
        .compose(state -> refusal(vertx, command("eject", iid("D1")), new DeliveryOptions()))
        .compose(refused -> {
          ctx.verify(() -> {
            assertEquals(Failures.UNAUTHORIZED, refused.failureCode());
            assertEquals("admin token missing or wrong", refused.getMessage());
            assertEquals(1.0, parts.count("narwhal.admin.refused"));
          });
          return refusal(vertx, command("erase", new JsonObject()), new DeliveryOptions().addHeader("token", "wrong"));
        })
        .compose(refused -> {
          ctx.verify(() -> assertEquals(Failures.UNAUTHORIZED, refused.failureCode(), "an unknown command is no way past the token"));
          return refusal(vertx, command("erase", new JsonObject()), WITH_TOKEN);
        })
        .onComplete(ctx.succeeding(refused -> ctx.verify(() -> {
          assertEquals(Failures.BAD_MESSAGE, refused.failureCode());
          assertEquals("unknown admin command \"erase\"", refused.getMessage());
          assertEquals(2.0, parts.count("narwhal.admin.refused"));
          assertEquals("serving", parts.engine("D1").getString("state"), "nothing was ejected");
          ctx.completeNow();
        })));
  }

  @Test
  void withoutAConfiguredTokenOnlyStateIsServed(Vertx vertx, VertxTestContext ctx) {
    serve(vertx, BreakerParts.unreachable(vertx, List.of("P0:prefill", "D0:decode"), new JsonObject(), now, null));
    vertx.eventBus().<JsonObject>request(Addresses.ADMIN, command("state", new JsonObject()))
        .compose(state -> refusal(vertx, command("eject", iid("D0")), WITH_TOKEN))
        .onComplete(ctx.succeeding(refused -> ctx.verify(() -> {
          assertEquals(Failures.UNAUTHORIZED, refused.failureCode());
          assertEquals("admin commands other than state need a configured admin token", refused.getMessage());
          ctx.completeNow();
        })));
  }

  @Test
  void badArgumentsAndTheBooksRefusalsAre400sNamingWhy(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = serve(vertx, BreakerParts.unreachable(vertx, List.of("P0:prefill", "D0:decode", "D1:decode"),
        new JsonObject(), now, TOKEN));
    refusal(vertx, command("eject", iid("D9")), WITH_TOKEN)
        .compose(refused -> {
          ctx.verify(() -> assertEquals("eject: unknown engine D9", refused.getMessage()));
          return refusal(vertx, command("quarantine", iid("D0").put("seconds", "soon")), WITH_TOKEN);
        })
        .compose(refused -> {
          ctx.verify(() -> assertEquals("quarantine: seconds: soon is not valid: expected a number > 0", refused.getMessage()));
          return refusal(vertx, command("eject", iid("P0")), WITH_TOKEN);
        })
        .compose(refused -> {
          ctx.verify(() -> {
            assertEquals(Failures.BAD_MESSAGE, refused.failureCode());
            assertTrue(refused.getMessage().startsWith("eject P0 refused: it is the last serving engine that can take the prefill phase"),
                refused.getMessage());
            assertEquals("serving", parts.engine("P0").getString("state"));
          });
          return vertx.eventBus().request(Addresses.ADMIN, command("eject", iid("P0").put("force", true)), WITH_TOKEN);
        })
        .onComplete(ctx.succeeding(reply -> ctx.verify(() -> {
          assertEquals("ejected", engine(reply, "P0").getString("state"), "forced, it is done");
          ctx.completeNow();
        })));
  }

  /**
   * The real shared data, with each write to its maps (the compare-and-sets of engine states) made only once a timer
   * has fired: an answer sent before its write completed would come before the change is there to read.
   */
  private static SharedData slowWrites(Vertx vertx, SharedData real) {
    return proxy(SharedData.class, real, vertx);
  }

  @SuppressWarnings("unchecked")
  private static <T> T proxy(Class<T> type, T real, Vertx vertx) {
    return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (self, method, args) -> {
      if (type == AsyncMap.class && WRITES.contains(method.getName())) {
        return vertx.timer(50).compose(t -> invoke(method, real, args));
      }
      Object result = method.invoke(real, args);
      return result instanceof Future<?> future
          ? future.map(value -> value instanceof AsyncMap<?, ?> map ? proxy(AsyncMap.class, map, vertx) : value) : result;
    });
  }

  private static Future<Object> invoke(java.lang.reflect.Method method, Object target, Object[] args) {
    try {
      return ((Future<?>) method.invoke(target, args)).map(v -> (Object) v);
    } catch (ReflectiveOperationException e) {
      return Future.failedFuture(e);
    }
  }

  private static final java.util.Set<String> WRITES = java.util.Set.of("put", "putIfAbsent", "replace", "replaceIfPresent");

  @Test
  void theReplyComesOnceTheChangeIsClusterState(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = serve(vertx, BreakerParts.of(vertx, BreakerParts.unreachable(List.of("P0:prefill", "D0:decode", "D1:decode")),
        new JsonObject(), now::get, TOKEN, real -> slowWrites(vertx, real)));
    vertx.eventBus().request(Addresses.ADMIN, command("quarantine", iid("D1").put("seconds", 30)), WITH_TOKEN)
        .compose(reply -> {
          ctx.verify(() -> {
            assertEquals("quarantined", engine(reply, "D1").getString("state"));
            assertEquals(now.get() + 30_000, engine(reply, "D1").getLong("quarantine_until_ms"), "on the book's clock");
          });
          return parts.shared.state("D1");
        })
        .onComplete(ctx.succeeding(held -> ctx.verify(() -> {
          assertNotNull(held, "every replica can read the change when the operator is answered");
          assertEquals("quarantined", held.getString("state"), held.encode());
          assertEquals("admin", held.getString("cause"));
          ctx.completeNow();
        })));
  }

  @Test
  void reloadConfigIsPublishedToEveryReplica(Vertx vertx, VertxTestContext ctx) {
    serve(vertx, BreakerParts.unreachable(vertx, List.of("P0:prefill", "D0:decode"), new JsonObject(), now, TOKEN));
    Checkpoint published = ctx.checkpoint();
    Checkpoint answered = ctx.checkpoint();
    vertx.eventBus().consumer(Addresses.CONFIG_RELOAD, m -> published.flag());
    vertx.eventBus().<JsonObject>request(Addresses.ADMIN, command("reload-config", new JsonObject()), WITH_TOKEN)
        .onComplete(ctx.succeeding(reply -> ctx.verify(() -> {
          assertEquals("requested on every replica", reply.body().getString("reload"));
          answered.flag();
        })));
  }

  @Test
  void aWaveRestartValidatesTheRealEnginesBeforeItLiftsTheFleetHold(Vertx vertx, VertxTestContext ctx) {
    JsonObject wholeWave = new JsonObject()
        .put("engine_contract", new JsonObject().put("vllm_version", "0.29.0").put("model", BreakerParts.MODEL))
        .put("recovery", new JsonObject().put("engine_restart_policy", "whole_wave"));
    BreakerParts.sims(vertx, List.of("P0:prefill", "D0:decode", "D1:decode")).onComplete(ctx.succeeding(fleet -> {
      BreakerParts parts = serve(vertx, BreakerParts.over(vertx, fleet, wholeWave, now::get, TOKEN));
      vertx.eventBus().request(Addresses.ADMIN, command("eject", iid("D1")), WITH_TOKEN)
          .compose(reply -> {
            ctx.verify(() -> assertEquals(true, ((JsonObject) reply.body()).getBoolean("fleet_hold"), "an ejection holds the whole fleet"));
            return fleet.engine("D1").stopListening();
          })
          .compose(v -> refusal(vertx, command("wave-restart", new JsonObject()), WITH_TOKEN))
          .compose(refused -> {
            ctx.verify(() -> {
              assertTrue(refused.getMessage().startsWith("wave-restart: validation failed for D1 ("), refused.getMessage());
              assertTrue(refused.getMessage().endsWith("; the fleet stays held"), refused.getMessage());
              assertTrue(parts.book.fleetHold());
            });
            return fleet.engine("D1").resumeListening();
          })
          .compose(v -> vertx.eventBus().request(Addresses.ADMIN, command("wave-restart", new JsonObject()), WITH_TOKEN))
          .onComplete(ctx.succeeding(reply -> ctx.verify(() -> {
            assertEquals(false, ((JsonObject) reply.body()).getBoolean("fleet_hold"));
            assertEquals("serving", engine(reply, "D1").getString("state"));
            assertEquals(false, parts.book.fleetHold());
            ctx.completeNow();
          })));
    }));
  }

  @Test
  void aWaveRestartWithNothingToRestartIsRefused(Vertx vertx, VertxTestContext ctx) {
    serve(vertx, BreakerParts.unreachable(vertx, List.of("P0:prefill", "D0:decode"), new JsonObject(), now, TOKEN));
    refusal(vertx, command("wave-restart", new JsonObject()), WITH_TOKEN).onComplete(ctx.succeeding(refused -> ctx.verify(() -> {
      assertEquals(Failures.BAD_MESSAGE, refused.failureCode());
      assertTrue(refused.getMessage().startsWith("wave-restart: nothing to do"), refused.getMessage());
      ctx.completeNow();
    })));
  }
}
