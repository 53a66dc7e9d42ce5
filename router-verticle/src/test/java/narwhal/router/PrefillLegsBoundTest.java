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
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@code flow.prefill_legs_max} (docs/operations.md#sharing-a-fleet): an attempt whose producer runs that many prefills
 * of this replica waits, with legs free, and starts when one of them ends — in the flow's order: a {@code high}
 * attempt first, then fairly across tenants, not behind a flood queued before it. Attempts on another producer pass.
 */
@Timeout(30)
class PrefillLegsBoundTest {
  private static final long NO_TIMEOUT = 600_000;
  private static final int LIMIT = 100;
  private static final TenantConfig FLOOD = new TenantConfig("flood", "", "", "normal", 1, 0, 0, 0);
  private static final TenantConfig STEADY = new TenantConfig("steady", "", "", "normal", 1, 0, 0, 0);
  private static final TenantConfig HIGH = new TenantConfig("vip", "", "", "high", 1, 0, 0, 0);
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final Admission admission = new Admission();
  private final AtomicInteger max = new AtomicInteger(2);
  private final List<String> grants = Collections.synchronizedList(new ArrayList<>());

  PrefillLegsBoundTest() {
    admission.onPrefillLegsMax(max::get);
  }

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  private Admission.LegTurn turn(TenantConfig tenant, String producer, String label) {
    Admission.LegTurn turn = admission.legTurn(LIMIT, context, new Admission.Lane(tenant, 10), "m", producer, NO_TIMEOUT,
        1_000_000);
    turn.granted().onSuccess(v -> grants.add(label));
    return turn;
  }

  private void settle() {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
  }

  private int heldByProducers() {
    return admission.queueJson().getInteger("held_by_producers");
  }

  @Test
  void anAttemptWaitsForItsProducersPrefillsAndStartsWhenOneEnds() {
    Admission.LegTurn a = turn(FLOOD, "P0", "a");
    turn(FLOOD, "P0", "b");
    turn(FLOOD, "P0", "c");
    settle();
    assertEquals(List.of("a", "b"), grants, "P0 runs two prefills of this replica: the third waits with legs free");
    assertEquals(1, heldByProducers());
    assertEquals(2, admission.queueJson().getJsonObject("prefills_running").getInteger("P0"));
    turn(FLOOD, "P1", "other");
    settle();
    assertEquals(List.of("a", "b", "other"), grants, "an attempt on another producer passes the held one");
    a.prefillEnded();
    settle();
    assertEquals(List.of("a", "b", "other", "c"), grants, "a's prefill ended: c starts, a still runs its decode");
    assertEquals(4, admission.legsInFlight());
    a.prefillEnded();
    turn(FLOOD, "P0", "d");
    settle();
    assertEquals(4, grants.size(), "a's prefill ended once: a second call frees nothing more");
    a.release(LIMIT);
    settle();
    assertEquals(4, grants.size(), "a's decode ending frees no prefill of P0: b and c still run theirs");
  }

  @Test
  void anAttemptReleasedDuringItsPrefillFreesItsProducer() {
    Admission.LegTurn a = turn(FLOOD, "P0", "a");
    turn(FLOOD, "P0", "b");
    turn(FLOOD, "P0", "c");
    settle();
    a.release(LIMIT);
    settle();
    assertEquals(List.of("a", "b", "c"), grants, "a failed before its prefill answered: its place on P0 is free");
    a.prefillEnded();
    turn(FLOOD, "P0", "d");
    settle();
    assertEquals(3, grants.size(), "a released counts nothing more on P0 (b and c run)");
    assertEquals(2, admission.queueJson().getJsonObject("prefills_running").getInteger("P0"));
  }

  @Test
  void theNextPrefillGoesToTheHighClassThenFairlyAcrossTenants() {
    List<Admission.LegTurn> running = new ArrayList<>();
    running.add(turn(FLOOD, "P0", "f1"));
    running.add(turn(FLOOD, "P0", "f2"));
    for (int i = 3; i <= 10; i++) turn(FLOOD, "P0", "f" + i);
    turn(STEADY, "P0", "steady");
    turn(HIGH, "P0", "vip");
    settle();
    assertEquals(List.of("f1", "f2"), grants);
    running.get(0).prefillEnded();
    settle();
    assertEquals("vip", grants.get(2), "the high class's attempt goes first, though queued last: " + grants);
    running.get(1).prefillEnded();
    settle();
    assertEquals("steady", grants.get(3), "then the steady tenant's, not the flood's eight queued before it: " + grants);
  }

  @Test
  void theBoundIsReadAtEachDecisionAndZeroTurnsItOff() {
    turn(FLOOD, "P0", "a");
    turn(FLOOD, "P0", "b");
    turn(FLOOD, "P0", "c");
    settle();
    assertEquals(2, grants.size());
    max.set(0);
    turn(FLOOD, "P1", "d");
    settle();
    assertEquals(List.of("a", "b", "c", "d"), grants, "off by reload: the held attempt starts at the next decision, "
        + "before the one queued after it");
    assertEquals(0, heldByProducers());
  }
}
