package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CancellationException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Admission.LegTurn}s under {@code serving.max_legs_in_flight}: granted in arrival order up to the limit, on the
 * asking context; a turn released while waiting never runs and gives nothing back twice; the limit as configured at
 * each release (a hot reload) decides how many of the waiting ones run next.
 */
@Timeout(30)
class LegTurnsTest {
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  /** A turn of the default tenant, with no queue timeout or bound in reach. */
  private Admission.LegTurn turn(Admission admission, int limit) {
    return admission.legTurn(limit, context, Admission.Lane.DEFAULT, 600_000, 1_000_000);
  }

  /** Whether {@code turn} has been granted once the context has run what was queued on it before. */
  private boolean granted(Admission.LegTurn turn) {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
    return turn.granted().succeeded();
  }

  @Test
  void turnsAreGrantedInArrivalOrderUpToTheLimit() {
    Admission admission = new Admission();
    Admission.LegTurn first = turn(admission, 2);
    Admission.LegTurn second = turn(admission, 2);
    Admission.LegTurn third = turn(admission, 2);
    Admission.LegTurn fourth = turn(admission, 2);
    assertTrue(granted(first));
    assertTrue(granted(second));
    assertFalse(granted(third));
    assertEquals(2, admission.legsInFlight());
    assertEquals(2, admission.legsWaiting());
    second.release(2);
    assertTrue(granted(third));
    assertFalse(granted(fourth), "the next in arrival order, one at a time");
    second.release(2);
    assertEquals(2, admission.legsInFlight(), "a second release gives nothing back twice");
  }

  @Test
  void aTurnReleasedWhileWaitingNeverRunsAndItsPlaceGoesToTheNext() {
    Admission admission = new Admission();
    Admission.LegTurn running = turn(admission, 1);
    Admission.LegTurn gone = turn(admission, 1);
    Admission.LegTurn next = turn(admission, 1);
    gone.release(1);
    assertEquals(1, admission.legsWaiting());
    running.release(1);
    assertTrue(granted(next));
    assertTrue(gone.granted().failed());
    assertInstanceOf(CancellationException.class, gone.granted().cause());
    next.release(1);
    assertEquals(0, admission.legsInFlight());
    assertEquals(0, admission.legsWaiting());
  }

  @Test
  void theLimitAtEachReleaseDecidesHowManyWaitingOnesRun() {
    Admission admission = new Admission();
    Admission.LegTurn a = turn(admission, 1);
    Admission.LegTurn b = turn(admission, 1);
    Admission.LegTurn c = turn(admission, 1);
    Admission.LegTurn d = turn(admission, 1);
    a.release(3);
    assertTrue(granted(b));
    assertTrue(granted(c));
    assertTrue(granted(d), "raised to 3: the three waiting ones run");
    Admission.LegTurn e = turn(admission, 1);
    b.release(1);
    c.release(1);
    assertFalse(granted(e), "lowered to 1: d still runs, nothing new starts");
    d.release(1);
    assertTrue(granted(e));
  }
}
