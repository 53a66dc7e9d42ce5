package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.config.TenantConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attempts held by their engines' saturation ({@code flow.engine_queue_max}, docs/operations.md#sharing-a-fleet):
 * with legs free, an attempt of a saturated model waits; one of its model that ends here lets one waiting start in
 * its place; other models' attempts pass the held ones; once the engines have room the held ones start without any
 * leg ending. Which models are saturated is what placement's readings say ({@code EngineSaturationTest} runs that
 * with real engines); here it is set.
 */
@Timeout(30)
class SaturationHoldTest {
  private static final long NO_TIMEOUT = 600_000;
  private static final int LIMIT = 100;
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  /** The admission's clock (epoch ms as readings are stamped): each reading is after the starts before it. */
  private final AtomicLong clock = new AtomicLong(1_000);
  private final Admission admission = new Admission(clock::get);
  /** Per model, the starts its engines take as of a reading; a model not in it: no bound. */
  private final Map<String, LocalPlacement.Room> rooms = new ConcurrentHashMap<>();
  private final List<String> grants = Collections.synchronizedList(new ArrayList<>());

  SaturationHoldTest() {
    admission.onEngineRoom(rooms::get);
  }

  /** A new reading: {@code model}'s engines take {@code starts} more, saturated at 0 ({@code null}: no bound). */
  private void reading(String model, Integer starts) {
    long at = clock.incrementAndGet();
    clock.incrementAndGet();
    if (starts == null) rooms.remove(model); else rooms.put(model, new LocalPlacement.Room(starts == 0, starts, at));
  }

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  private static final TenantConfig NORMAL = new TenantConfig("t", "", "", "normal", 1, 0, 0, 0);
  private static final TenantConfig HIGH = new TenantConfig("vip", "", "", "high", 1, 0, 0, 0);

  private Admission.LegTurn turn(TenantConfig tenant, String model, String label) {
    Admission.LegTurn turn = admission.legTurn(LIMIT, context, new Admission.Lane(tenant, 10), model, NO_TIMEOUT, 1_000_000);
    turn.granted().onSuccess(v -> grants.add(label));
    return turn;
  }

  private void settle() {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
  }

  @Test
  void aSaturatedModelsAttemptWaitsWithLegsFreeAndStartsInPlaceOfOneThatEnded() {
    Admission.LegTurn running = turn(NORMAL, "m", "running");
    settle();
    assertEquals(List.of("running"), grants);
    reading("m", 0);
    turn(NORMAL, "m", "held-1");
    turn(NORMAL, "m", "held-2");
    settle();
    assertEquals(List.of("running"), grants, "legs are free but the engines are saturated");
    assertEquals(1, admission.legsInFlight());
    assertEquals(2, admission.queueJson().getInteger("held_by_engines"));
    running.release(LIMIT);
    settle();
    assertEquals(List.of("running", "held-1"), grants, "one in place of the one that ended, in arrival order");
    assertEquals(1, admission.legsInFlight(), "the engines' load stays where it was");
    assertEquals(1, admission.legsWaiting());
  }

  @Test
  void anotherModelsAttemptPassesTheHeldOnesAndAHigherClassStillGoesFirstWithinAModel() {
    Admission.LegTurn running = turn(NORMAL, "m", "running");
    reading("m", 0);
    turn(NORMAL, "m", "normal-m");
    turn(HIGH, "m", "high-m");
    turn(NORMAL, "other", "normal-other");
    settle();
    assertEquals(List.of("running", "normal-other"), grants, "the held model's attempts do not block another model's");
    running.release(LIMIT);
    settle();
    assertEquals(List.of("running", "normal-other", "high-m"), grants, "the replacement goes by class");
  }

  @Test
  void heldAttemptsStartOnceTheEnginesHaveRoomWithoutALegEnding() {
    reading("m", 0);
    Promise<Void> started = Promise.promise();
    Admission.LegTurn held = turn(NORMAL, "m", "held");
    held.granted().onSuccess(v -> started.tryComplete());
    settle();
    assertFalse(held.granted().isComplete());
    reading("m", null);
    RouterHarness.await(started.future());
    assertEquals(List.of("held"), grants);
    assertEquals(0, admission.queueJson().getInteger("held_by_engines"));
  }

  @Test
  void aHeldAttemptStillTimesOutAndLeavesNothingBehind() {
    reading("m", 0);
    Admission.LegTurn held = admission.legTurn(LIMIT, context, new Admission.Lane(NORMAL, 10), "m", 50, 1_000_000);
    Throwable why = RouterHarness.await(held.granted().transform(ar -> Future.succeededFuture(ar.cause())));
    assertTrue(why instanceof Admission.QueueRefused refused && refused.timedOut, String.valueOf(why));
    assertEquals(0, admission.legsWaiting());
    assertEquals(0, admission.legsInFlight());
  }

  @Test
  void aModelThatIsNotSaturatedTakesTheFastPathAndNoModelIsNeverHeld() {
    reading("m", 0);
    turn(NORMAL, "other", "other");
    turn(NORMAL, null, "no-model");
    settle();
    assertEquals(List.of("other", "no-model"), grants);
  }

  @Test
  void aReadingWithRoomForTwoLetsTwoHeldAttemptsGoAndTheNextReadingDecidesTheRest() {
    reading("m", 0);
    for (int i = 0; i < 5; i++) turn(NORMAL, "m", "held-" + i);
    settle();
    assertEquals(List.of(), grants);
    reading("m", 2);
    RouterHarness.await(Future.<Void>future(p -> vertx.setPeriodic(10, t -> {
      if (grants.size() >= 2) {
        vertx.cancelTimer(t);
        p.tryComplete();
      }
    })));
    // another decision against the same reading (a turn of another model): the reading's room is spent
    turn(NORMAL, "other", "other");
    settle();
    assertEquals(List.of("held-0", "held-1", "other"), grants);
    assertEquals(3, admission.legsWaiting());
    reading("m", 1);
    RouterHarness.await(Future.<Void>future(p -> vertx.setPeriodic(10, t -> {
      if (grants.size() >= 4) {
        vertx.cancelTimer(t);
        p.tryComplete();
      }
    })));
    assertEquals(List.of("held-0", "held-1", "other", "held-2"), grants);
  }

  @Test
  void legsReservedForTheHighClassAreNotTakenByTheOthers() {
    java.util.concurrent.atomic.AtomicInteger reserved = new java.util.concurrent.atomic.AtomicInteger(1);
    admission.onReservedForHigh(reserved::get);
    List<Admission.LegTurn> normal = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      normal.add(admission.legTurn(3, context, new Admission.Lane(NORMAL, 10), "m", NO_TIMEOUT, 1_000_000));
    }
    normal.get(0).granted().onSuccess(v -> grants.add("normal-0"));
    normal.get(1).granted().onSuccess(v -> grants.add("normal-1"));
    normal.get(2).granted().onSuccess(v -> grants.add("normal-2"));
    settle();
    assertEquals(List.of("normal-0", "normal-1"), grants, "the third leg is the high class's");
    Admission.LegTurn high = admission.legTurn(3, context, new Admission.Lane(HIGH, 10), "m", NO_TIMEOUT, 1_000_000);
    high.granted().onSuccess(v -> grants.add("high"));
    settle();
    assertEquals(List.of("normal-0", "normal-1", "high"), grants, "a high attempt finds it free beside the waiting normal one");
    high.release(3);
    settle();
    assertEquals(2, admission.legsInFlight(), "the reserved leg freed is not the normal one's");
    reserved.set(0);
    normal.get(0).release(3);
    settle();
    assertEquals(List.of("normal-0", "normal-1", "high", "normal-2"), grants, "a reload to 0 gives the others every leg");
  }

  @Test
  void aQueueBelowTheBoundHoldsNothingBackWhileTheModelWasNotSaturated() {
    // a prefill engine's reading often catches a request or two waiting for the next step: room for 1, not saturated
    rooms.put("m", new LocalPlacement.Room(false, 1, clock.incrementAndGet()));
    for (int i = 0; i < 5; i++) turn(NORMAL, "m", "t" + i);
    settle();
    assertEquals(5, grants.size(), "a model its engines never found saturated is not bounded by their room: " + grants);
  }
}
