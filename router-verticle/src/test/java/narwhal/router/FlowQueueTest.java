package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.config.TenantConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The router's queue ({@code flow}, docs/operations.md#sharing-a-fleet) as {@link Admission}'s leg turns order it:
 * a higher priority class first, tenants of a class served by weight whatever they queued, a wait bounded by
 * {@code flow.queue_timeout_s}, and a full queue shedding the tenant that queued most.
 */
@Timeout(30)
class FlowQueueTest {
  private static final long NO_TIMEOUT = 600_000;
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final Admission admission = new Admission();
  private final List<String> grants = Collections.synchronizedList(new ArrayList<>());
  private final List<Admission.LegTurn> grantedTurns = Collections.synchronizedList(new ArrayList<>());

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  private static TenantConfig tenant(String name, String priorityClass, int weight) {
    return new TenantConfig(name, "", "", priorityClass, weight, 0, 0, 0);
  }

  /** A turn of {@code t} costing {@code cost}; its grant is recorded as {@code label}. */
  private Admission.LegTurn turn(TenantConfig t, String label, int limit, long timeoutMs, int maxQueued) {
    Admission.LegTurn turn = admission.legTurn(limit, context, new Admission.Lane(t, 10), timeoutMs, maxQueued);
    turn.granted().onSuccess(v -> {
      grants.add(label);
      grantedTurns.add(turn);
    });
    return turn;
  }

  private Admission.LegTurn turn(TenantConfig t, String label) {
    return turn(t, label, 1, NO_TIMEOUT, 1_000_000);
  }

  /** Runs what the context had queued. */
  private void settle() {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
  }

  /** Releases the running turn {@code n} times in a row (the limit is 1); returns the labels of the turns granted. */
  private List<String> drain(int n) {
    settle();
    grants.clear();
    for (int i = 0; i < n; i++) {
      grantedTurns.get(grantedTurns.size() - 1).release(1);
      settle();
    }
    return List.copyOf(grants);
  }

  @Test
  void aHigherClassRunsBeforeLowerOnesThatWaitedLonger() {
    TenantConfig batch = tenant("batch", "low", 1);
    TenantConfig team = tenant("team", "normal", 1);
    TenantConfig live = tenant("live", "high", 1);
    turn(team, "running");
    turn(batch, "low-1");
    turn(team, "normal-1");
    turn(batch, "low-2");
    turn(live, "high-1");
    assertEquals(List.of("high-1", "normal-1", "low-1", "low-2"), drain(4));
  }

  @Test
  void tenantsOfAClassShareTurnsByWeightWhateverTheyQueued() {
    TenantConfig flood = tenant("flood", "normal", 1);
    TenantConfig steady = tenant("steady", "normal", 1);
    turn(flood, "running");
    for (int i = 0; i < 20; i++) turn(flood, "flood");
    for (int i = 0; i < 5; i++) turn(steady, "steady");
    List<String> order = drain(25);
    assertEquals(5, Collections.frequency(order.subList(0, 11), "steady"),
        "the steady tenant's five turns come within the first eleven, though queued after twenty: " + order);

    drain(0);
    assertEquals(0, admission.legsWaiting());
    TenantConfig heavy = tenant("heavy", "normal", 3);
    TenantConfig light = tenant("light", "normal", 1);
    for (int i = 0; i < 40; i++) turn(light, "light");
    for (int i = 0; i < 40; i++) turn(heavy, "heavy");
    List<String> first20 = drain(20);
    int heavyTurns = Collections.frequency(first20, "heavy");
    assertTrue(heavyTurns >= 14 && heavyTurns <= 16, "weight 3 against 1: about 15 of 20 turns, got " + heavyTurns + ": " + first20);
  }

  @Test
  void aTurnThatWaitsPastTheQueueTimeoutIsRefusedAndLeavesNothingBehind() {
    TenantConfig t = tenant("t", "normal", 1);
    Admission.LegTurn running = turn(t, "running", 1, NO_TIMEOUT, 100);
    Admission.LegTurn waiting = turn(t, "waiting", 1, 50, 100);
    Throwable why = RouterHarness.await(waiting.granted().transform(ar -> Future.succeededFuture(ar.cause())));
    assertInstanceOf(Admission.QueueRefused.class, why);
    assertTrue(((Admission.QueueRefused) why).timedOut);
    assertEquals(0, admission.legsWaiting());
    running.release(1);
    settle();
    assertEquals(0, admission.legsInFlight(), "the timed-out turn never ran");
    waiting.release(1);
    assertEquals(0, admission.legsInFlight());
  }

  @Test
  void aFullQueueShedsTheNewestTurnOfTheTenantThatQueuedMost() {
    TenantConfig flood = tenant("flood", "normal", 1);
    TenantConfig steady = tenant("steady", "normal", 1);
    turn(flood, "running", 1, NO_TIMEOUT, 3);
    Admission.LegTurn f1 = turn(flood, "f1", 1, NO_TIMEOUT, 3);
    Admission.LegTurn f2 = turn(flood, "f2", 1, NO_TIMEOUT, 3);
    Admission.LegTurn f3 = turn(flood, "f3", 1, NO_TIMEOUT, 3);
    Admission.LegTurn s1 = turn(steady, "s1", 1, NO_TIMEOUT, 3);
    settle();
    assertTrue(f3.granted().failed(), "the flood's newest gives its place");
    assertFalse(((Admission.QueueRefused) f3.granted().cause()).timedOut);
    assertFalse(f1.granted().isComplete());
    assertFalse(f2.granted().isComplete());
    assertFalse(s1.granted().isComplete(), "the steady tenant's turn waits in the queue");
    Admission.LegTurn f4 = turn(flood, "f4", 1, NO_TIMEOUT, 3);
    settle();
    assertInstanceOf(Admission.QueueRefused.class, f4.granted().cause(), "the flood, already the longest, is refused itself");
    assertEquals(3, admission.legsWaiting());
  }
}
