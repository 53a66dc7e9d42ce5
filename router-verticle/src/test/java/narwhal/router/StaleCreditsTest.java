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

/**
 * Attack on issue 44: once the engines of a model are saturated, "while any of them waits, an attempt of the model
 * starts in place of one of its attempts that ended here" (docs/operations.md#sharing-a-fleet). Attempts that ended
 * while none waited were replaced by nobody; the engines' queues they left room in were filled by other replicas (the
 * readings still say full). A burst arriving later must wait for the engines, not start against those old endings.
 * The saturation is set as placement's reading would say it, as in {@link SaturationHoldTest}.
 */
@Timeout(30)
class StaleCreditsTest {
  private static final long NO_TIMEOUT = 600_000;
  private static final int LIMIT = 100;
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final Admission admission = new Admission();
  private final Map<String, LocalPlacement.Room> rooms = new ConcurrentHashMap<>();
  private static final TenantConfig NORMAL = new TenantConfig("t", "", "", "normal", 1, 0, 0, 0);

  StaleCreditsTest() {
    admission.onEngineRoom(rooms::get);
  }

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  private Admission.LegTurn turn() {
    return admission.legTurn(LIMIT, context, new Admission.Lane(NORMAL, 10), "m", NO_TIMEOUT, 1_000_000);
  }

  private void settle() {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
  }

  @Test
  void attemptsThatEndedWhileNoneWaitedDoNotLetALaterBurstIntoFullEngines() {
    List<Admission.LegTurn> running = new ArrayList<>();
    for (int i = 0; i < 5; i++) running.add(turn());
    settle();
    assertEquals(5, admission.legsInFlight());
    rooms.put("m", new LocalPlacement.Room(true, 0, 1));
    running.forEach(t -> t.release(LIMIT));
    settle();
    assertEquals(0, admission.legsInFlight());
    // later readings: the engines' queues are still full (other replicas filled them)
    rooms.put("m", new LocalPlacement.Room(true, 0, 2));
    for (int i = 0; i < 5; i++) turn();
    settle();
    assertEquals(0, admission.legsInFlight(), "the engines are saturated and no attempt of m ended while these waited: "
        + "none starts; seen " + admission.legsInFlight() + " started, " + admission.legsWaiting() + " waiting");
    assertEquals(5, admission.queueJson().getInteger("held_by_engines"));
  }
}
