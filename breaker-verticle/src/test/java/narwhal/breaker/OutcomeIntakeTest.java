package narwhal.breaker;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.Checkpoint;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.LegOutcome;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link OutcomeIntake} alone on a real event bus, with a real book, cluster sync and local shared state: a failure is
 * counted cluster-wide before the book judges it, the state change it causes is counted, journaled, written to the
 * shared map and published; probes go to the runner it is given; a success resets the shared streak.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class OutcomeIntakeTest {
  private static final List<String> FLEET = List.of("P0:prefill", "D0:decode", "D1:decode");
  private final AtomicLong now = new AtomicLong(1_000_000);

  private static LegOutcome failure(String iid, FailureClass c) {
    return new LegOutcome(iid, Phase.DECODE, false, c, c.wireName(), null, false);
  }

  @Test
  void aFailureCountsAtTheClusterWideStreakAndItsEjectionIsCountedJournaledAndWritten(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET, new JsonObject().put("recovery", new JsonObject().put("eject_after", 3)),
        now, null);
    Checkpoint published = ctx.checkpoint();
    Checkpoint journaled = ctx.checkpoint();
    vertx.eventBus().<JsonObject>consumer(Addresses.JOURNAL_EVENT, m -> ctx.verify(() -> {
      assertEquals("engine_state", m.body().getString("event"));
      assertEquals("D0", m.body().getString("iid"));
      assertEquals("ejected", m.body().getString("to"));
      assertEquals("connection", m.body().getString("cause"));
      journaled.flag();
    }));
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      if (event == null) return;
      parts.shared.state("D0").onComplete(ctx.succeeding(held -> ctx.verify(() -> {
        assertEquals(EngineState.EJECTED, event.state(), "the third failure, two of them counted by another replica, ejects");
        assertEquals("connection", event.cause());
        assertEquals("ejected", held.getString("state"), "the change is in the shared map when it is published: " + held);
        assertEquals(1.0, parts.count("narwhal.engine.ejections", "iid", "D0", "cause", "connection"));
        published.flag();
      })));
    });
    vertx.runOnContext(v -> parts.shared.increment("D0", FailureClass.CONNECTION)
        .compose(n -> parts.shared.increment("D0", FailureClass.CONNECTION))
        .onComplete(ctx.succeeding(two -> ctx.verify(() -> {
          assertEquals(2, two);
          assertEquals(EngineState.SERVING, parts.state("D0"), "this replica's book has counted nothing");
          parts.intake.outcome(failure("D0", FailureClass.CONNECTION));
        }))));
  }

  @Test
  void theProbesTheBookAsksForGoToTheRunnerItIsGiven(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET, new JsonObject(), now, null);
    parts.intake.probes(probe -> ctx.verify(() -> {
      assertEquals(new BreakerAction.Probe("D0", ProbeKind.HEALTH, null, false), probe, "a timeout verdict asks for a health probe");
      assertEquals(EngineState.SERVING, parts.state("D0"), "a timeout alone does not take the engine out");
      assertTrue(parts.engine("D0").getBoolean("probing"), "the book waits for the probe: " + parts.engine("D0"));
      ctx.completeNow();
    }));
    vertx.runOnContext(v -> parts.intake.outcome(failure("D0", FailureClass.TIMEOUT)));
  }

  @Test
  void aSuccessResetsTheSharedStreakAndPublishesTheReset(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET, new JsonObject().put("recovery", new JsonObject().put("eject_after", 5)),
        now, null);
    List<Integer> seen = new ArrayList<>();
    vertx.eventBus().<JsonObject>consumer(Addresses.STREAK_CHANGED, m -> {
      seen.add(m.body().getInteger("streak"));
      if (seen.size() == 1) {
        parts.shared.streak("D0", FailureClass.CONNECTION).onComplete(ctx.succeeding(n -> ctx.verify(() -> {
          assertEquals(1, n, "the failure is counted in the shared counter");
          parts.intake.outcome(new LegOutcome("D0", Phase.DECODE, true, null, null, null, false));
        })));
        return;
      }
      ctx.verify(() -> {
        assertEquals(List.of(1, 0), seen, "counted, then reset by the success");
        assertEquals(0, parts.book.streak("D0", FailureClass.CONNECTION));
      });
      BreakerParts.until(vertx, () -> parts.shared.streak("D0", FailureClass.CONNECTION).map(n -> n == 0))
          .onComplete(ctx.succeedingThenComplete());
    });
    vertx.runOnContext(v -> parts.intake.outcome(failure("D0", FailureClass.CONNECTION)));
  }
}
