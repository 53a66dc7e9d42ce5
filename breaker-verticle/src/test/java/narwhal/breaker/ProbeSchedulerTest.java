package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.Lock;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.LegOutcome;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import narwhal.sim.SimFleet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ProbeScheduler} alone, with its real {@link Prober}, against real simulated engines on a real event bus: the
 * probes the book asks for run under the engine's cluster-wide probe lock (skipped while another replica holds it), a
 * passing probe readmits the engine with the probe counted and journaled, the liveness sweep ejects an engine that
 * stops answering, and a wave restart's validation names the engines that fail it.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ProbeSchedulerTest {
  private static final List<String> FLEET = List.of("P0:prefill", "D0:decode", "D1:decode");
  private final AtomicLong now = new AtomicLong(1_000_000);

  /** Starts the engines and the parts over them, on a Vert.x context, then runs {@code test}. */
  private void withEngines(Vertx vertx, VertxTestContext ctx, JsonObject overrides, BiConsumer<SimFleet, BreakerParts> test) {
    vertx.runOnContext(v -> BreakerParts.sims(vertx, FLEET).onComplete(ctx.succeeding(fleet -> {
      BreakerParts parts = BreakerParts.over(vertx, fleet, overrides, now::get, null);
      parts.intake.probes(parts.probes::run);
      fleet.engines().forEach(e -> e.clearRequests());
      ctx.verify(() -> test.accept(fleet, parts));
    })));
  }

  /** Holds D0 on a stream failure whose handoff P0 made, as the router would report it. */
  private static Future<Void> holdD0(BreakerParts parts) {
    LegOutcome stream = new LegOutcome("D0", Phase.DECODE, false, FailureClass.STREAM, "stream", "P0", false);
    return parts.intake.step(() -> parts.book.record(stream, 1));
  }

  /** A readmission round once the readmission interval has passed on the book's clock. */
  private Future<Void> readmissionRound(BreakerParts parts) {
    return parts.intake.step(() -> {
      now.addAndGet(parts.config.recovery().readmitIntervalMs());
      return parts.book.readmissionRound();
    });
  }

  @Test
  void aHeldEngineWhoseInferenceProbePassesServesAgainWithTheProbeCountedAndJournaled(Vertx vertx, VertxTestContext ctx) {
    List<JsonObject> probeRows = new CopyOnWriteArrayList<>();
    vertx.eventBus().<JsonObject>consumer(Addresses.JOURNAL_EVENT, m -> {
      if ("probe".equals(m.body().getString("event"))) probeRows.add(m.body());
    });
    withEngines(vertx, ctx, new JsonObject(), (fleet, parts) -> {
      vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> ctx.verify(() -> {
        EngineStateEvent event = EngineStateEvent.fromJson(m.body());
        if (event == null || event.state() != EngineState.SERVING) return;
        assertEquals("D0", event.iid());
        assertEquals("inference_probe", event.cause(), "readmitted on the probe's evidence");
        assertEquals(1.0, parts.count("narwhal.engine.probes", "iid", "D0", "kind", "inference", "outcome", "passed"));
        assertEquals(1, probeRows.size(), "the probe is journaled: " + probeRows);
        assertEquals("passed", probeRows.get(0).getString("outcome"));
        assertTrue(probeRows.get(0).getString("detail").contains("decoded a handoff from P0"), probeRows.get(0).encode());
        assertTrue(!fleet.engine("D0").requests().isEmpty() && !fleet.engine("P0").requests().isEmpty(),
            "the probe ran on the real engines");
        ctx.completeNow();
      }));
      holdD0(parts).compose(held -> {
        ctx.verify(() -> assertEquals(EngineState.HELD, parts.state("D0")));
        return readmissionRound(parts);
      }).onFailure(ctx::failNow);
    });
  }

  @Test
  void aProbeIsSkippedWhileAnotherReplicaHoldsTheEnginesProbeLock(Vertx vertx, VertxTestContext ctx) {
    withEngines(vertx, ctx, new JsonObject(), (fleet, parts) -> {
      SharedBreakerState otherReplica = new SharedBreakerState(vertx.sharedData(), parts.guard);
      Lock[] held = new Lock[1];
      holdD0(parts)
          .compose(v -> otherReplica.probeLock("D0", 60_000))
          .compose(lock -> {
            ctx.verify(() -> assertTrue(lock.isPresent()));
            held[0] = lock.orElseThrow();
            return readmissionRound(parts);
          })
          .compose(v -> BreakerParts.until(vertx, () -> Future.succeededFuture(!parts.engine("D0").getBoolean("probing"))))
          .compose(v -> {
            ctx.verify(() -> {
              assertEquals(EngineState.HELD, parts.state("D0"), "not probed, still held");
              assertEquals(List.of(), fleet.engine("D0").requests(), "no probe reached the engine");
              assertEquals(0.0, parts.count("narwhal.engine.probes", "iid", "D0", "kind", "inference", "outcome", "passed"));
            });
            held[0].release();
            return BreakerParts.until(vertx, () -> readmissionRound(parts).map(round -> parts.state("D0") == EngineState.SERVING));
          })
          .onComplete(ctx.succeedingThenComplete());
    });
  }

  @Test
  void theLivenessSweepEjectsAnEngineThatStopsAnsweringAndSparesTheOthers(Vertx vertx, VertxTestContext ctx) {
    JsonObject recovery = new JsonObject().put("recovery", new JsonObject().put("monitor_interval_s", 0.05).put("liveness_every", 1)
        .put("liveness_misses", 2));
    withEngines(vertx, ctx, recovery, (fleet, parts) -> {
      vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> ctx.verify(() -> {
        EngineStateEvent event = EngineStateEvent.fromJson(m.body());
        if (event == null) return;
        assertEquals("D1", event.iid(), "only the engine that stopped answering: " + event);
        assertEquals(EngineState.EJECTED, event.state());
        assertEquals("liveness", event.cause());
        assertEquals(EngineState.SERVING, parts.state("D0"));
        assertEquals(EngineState.SERVING, parts.state("P0"));
        ctx.completeNow();
      }));
      fleet.engine("D1").stopListening().onComplete(ctx.succeeding(v -> parts.probes.arm()));
    });
  }

  @Test
  void aWaveRestartsValidationNamesTheEnginesThatFailIt(Vertx vertx, VertxTestContext ctx) {
    withEngines(vertx, ctx, new JsonObject(), (fleet, parts) -> parts.probes.validateFleet()
        .compose(failed -> {
          ctx.verify(() -> assertEquals(List.of(), failed, "every engine answers"));
          return fleet.engine("D1").stopListening();
        })
        .compose(v -> parts.probes.validateFleet())
        .onComplete(ctx.succeeding(failed -> ctx.verify(() -> {
          assertEquals(1, failed.size(), "D1 alone fails: " + failed);
          assertTrue(failed.get(0).startsWith("D1 ("), "named, with why: " + failed);
          ctx.completeNow();
        }))));
  }
}
