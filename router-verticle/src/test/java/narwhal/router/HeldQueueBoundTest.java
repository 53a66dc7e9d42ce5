package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.config.TenantConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attack on issue 44: {@code flow.max_queued} bounds the attempts waiting at the router (docs/configuration.md
 * {@code flow.max_queued}, docs/operations.md#sharing-a-fleet "At most flow.max_queued requests wait"), whatever
 * holds them: legs all busy, their engines' queues full ({@code flow.engine_queue_max}), or the legs kept for the
 * high class ({@code flow.reserved_for_high}). One request beyond it ends 429 {@code queue_full}. The saturation is
 * set as placement's reading would say it, as in {@link SaturationHoldTest}.
 */
@Timeout(30)
class HeldQueueBoundTest {
  private static final long NO_TIMEOUT = 600_000;
  private static final int MAX_QUEUED = 4;
  private static final int REQUESTS = 10;
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final Admission admission = new Admission();
  private final Map<String, LocalPlacement.Room> rooms = new ConcurrentHashMap<>();

  private static final TenantConfig LOW = new TenantConfig("flood", "", "", "low", 1, 0, 0, 0);

  HeldQueueBoundTest() {
    admission.onEngineRoom(rooms::get);
  }

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  /** One request's attempt (a lane of its own: not a prompt of a batch already queued). */
  private Admission.LegTurn request(int limit, String model) {
    return admission.legTurn(limit, context, new Admission.Lane(LOW, 10), model, NO_TIMEOUT, MAX_QUEUED);
  }

  private void settle() {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
  }

  private static long queueFull(List<Admission.LegTurn> turns) {
    return turns.stream().filter(t -> t.granted().failed() && t.granted().cause() instanceof Admission.QueueRefused r
        && !r.timedOut).count();
  }

  @Test
  void attemptsHeldByTheirSaturatedEnginesStillCountAgainstMaxQueued() {
    rooms.put("m", new LocalPlacement.Room(true, 0, 1));
    List<Admission.LegTurn> turns = new ArrayList<>();
    for (int i = 0; i < REQUESTS; i++) turns.add(request(100, "m"));
    settle();
    assertEquals(0, admission.legsInFlight(), "the engines are saturated: nothing starts");
    assertTrue(admission.legsWaiting() <= MAX_QUEUED, "flow.max_queued " + MAX_QUEUED + " bounds the waiting attempts; "
        + "seen waiting " + admission.legsWaiting() + ", refused queue_full " + queueFull(turns));
    assertEquals(REQUESTS - MAX_QUEUED, queueFull(turns), "the requests beyond flow.max_queued end 429 queue_full");
  }

  @Test
  void attemptsKeptOutOfTheHighClassesLegsStillCountAgainstMaxQueued() {
    admission.onReservedForHigh(() -> 2);
    List<Admission.LegTurn> turns = new ArrayList<>();
    // max_legs_in_flight 3, reserved_for_high 2: one low attempt runs, the others wait with two legs free
    for (int i = 0; i < 1 + REQUESTS; i++) turns.add(request(3, null));
    settle();
    assertEquals(1, admission.legsInFlight(), "the low class gets the one leg not reserved");
    assertTrue(admission.legsWaiting() <= MAX_QUEUED, "flow.max_queued " + MAX_QUEUED + " bounds the waiting attempts; "
        + "seen waiting " + admission.legsWaiting() + ", refused queue_full " + queueFull(turns));
    assertEquals(REQUESTS - MAX_QUEUED, queueFull(turns), "the requests beyond flow.max_queued end 429 queue_full");
  }
}
