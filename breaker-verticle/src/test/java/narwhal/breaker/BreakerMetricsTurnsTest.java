package narwhal.breaker;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BreakerMetrics#trackInTurns}: a fleet's per-engine series registered a few engines per turn of the event loop
 * (a start with 1,000 engines held the loop about 2 s), every engine's in the end, and a reload's run replacing the one
 * before (an engine the reload removed gets no series back from the earlier run).
 */
@ExtendWith(VertxExtension.class)
class BreakerMetricsTurnsTest {
  private static List<EngineConfig> engines(int n) {
    JsonArray list = new JsonArray();
    IntStream.range(0, n).forEach(i -> list.add(new JsonObject().put("iid", (i % 8 == 0 ? "P" : "D") + i)
        .put("url", "http://127.0.0.1:9/" + i).put("role", i % 8 == 0 ? "prefill" : "decode")));
    return NarwhalConfig.fromJson(new JsonObject().put("model", "m").put("engines", list)).engines();
  }

  private static Set<String> tracked(SimpleMeterRegistry registry) {
    return registry.find("narwhal.engine.ejections").meters().stream().map(m -> m.getId().getTag("iid")).collect(Collectors.toSet());
  }

  @Test
  void aFewEnginesATurnEveryOneInTheEndAndAReloadsRunReplacesTheOneBefore(Vertx vertx, VertxTestContext ctx) {
    List<EngineConfig> fleet = engines(1_000);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", "m").put("engines", new JsonArray()
        .add(new JsonObject().put("iid", "x").put("url", "http://h:1"))));
    BreakerMetrics metrics = new BreakerMetrics(registry, new BreakerBook(fleet, config.recovery(), false, System::currentTimeMillis, "t"));
    List<String> all = fleet.stream().map(EngineConfig::iid).toList();
    List<String> kept = all.subList(0, 500);
    vertx.runOnContext(v -> {
      metrics.trackInTurns(vertx, all);
      ctx.verify(() -> assertEquals(BreakerMetrics.ENGINES_PER_TURN, tracked(registry).size(), "the first engines now, the others later"));
      Promise<Void> reloaded = Promise.promise();
      // a few turns later, a reload keeps the first half: the run before must stop, and the removed engines stay unseen
      vertx.runOnContext(a -> vertx.runOnContext(b -> {
        ctx.verify(() -> assertTrue(tracked(registry).size() > BreakerMetrics.ENGINES_PER_TURN
            && tracked(registry).size() < all.size(), "registered over several turns: " + tracked(registry).size()));
        metrics.retain(kept);
        metrics.trackInTurns(vertx, kept);
        reloaded.complete();
      }));
      // once every kept engine is registered, the earlier run (had it gone on, turn for turn beside the new one) would
      // have registered removed engines too
      reloaded.future().onSuccess(r -> vertx.setPeriodic(10, t -> {
        if (!tracked(registry).containsAll(kept)) return;
        vertx.cancelTimer(t);
        vertx.runOnContext(last -> ctx.verify(() -> {
          Set<String> removed = new java.util.TreeSet<>(tracked(registry));
          removed.removeAll(kept);
          assertEquals(Set.of(), removed.stream().limit(5).collect(Collectors.toSet()), "no removed engine's series (" + removed.size() + " found)");
          assertEquals(kept.size() * 8, registry.find("narwhal.engine.ejections").meters().size());
          ctx.completeNow();
        }));
      }));
    });
  }

  @Test
  void aCheckThatEndsAfterAReloadRemovedItsEngineBringsNoSeriesBack(Vertx vertx, VertxTestContext ctx) {
    // a liveness sweep, a probe or a readmission of D1 begun before the reload that removed it (its /health slow to
    // answer) ends after it: counted as before, its series came back in /metrics, for an engine the fleet no longer has
    List<EngineConfig> fleet = engines(2);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    BreakerMetrics metrics = new BreakerMetrics(registry, new BreakerBook(fleet, NarwhalConfig.fromJson(new JsonObject()
        .put("model", "m").put("engines", new JsonArray().add(new JsonObject().put("iid", "x").put("url", "http://h:1")))).recovery(),
        false, System::currentTimeMillis, "t"));
    vertx.runOnContext(v -> {
      metrics.trackInTurns(vertx, List.of("P0", "D1"));
      metrics.retain(List.of("P0"));
      metrics.trackInTurns(vertx, List.of("P0"));
      metrics.livenessChecked("D1", false);
      metrics.probed("D1", ProbeKind.values()[0], ProbeOutcome.values()[0]);
      metrics.ejected("D1", "liveness");
      metrics.readmitted("D1", "health_probe");
      metrics.livenessChecked("P0", true);
      ctx.verify(() -> {
        assertTrue(registry.getMeters().stream().noneMatch(m -> "D1".equals(m.getId().getTag("iid"))),
            "no series of the removed D1: " + registry.getMeters().stream().filter(m -> "D1".equals(m.getId().getTag("iid")))
                .map(m -> m.getId().getName()).toList());
        assertEquals(1.0, registry.find("narwhal.engine.liveness.checks").tags("iid", "P0", "outcome", "ok").counter().count(),
            "a listed engine's checks count");
      });
      ctx.completeNow();
    });
  }
}
