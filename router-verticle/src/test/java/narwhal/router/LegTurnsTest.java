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

  /** Whether {@code turn} has been granted once the context has run what was queued on it before. */
  private boolean granted(Admission.LegTurn turn) {
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
    return turn.granted().succeeded();
  }

  @Test
  void turnsAreGrantedInArrivalOrderUpToTheLimit() {
    Admission admission = new Admission();
    Admission.LegTurn first = admission.legTurn(2, context);
    Admission.LegTurn second = admission.legTurn(2, context);
    Admission.LegTurn third = admission.legTurn(2, context);
    Admission.LegTurn fourth = admission.legTurn(2, context);
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
    Admission.LegTurn running = admission.legTurn(1, context);
    Admission.LegTurn gone = admission.legTurn(1, context);
    Admission.LegTurn next = admission.legTurn(1, context);
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
    Admission.LegTurn a = admission.legTurn(1, context);
    Admission.LegTurn b = admission.legTurn(1, context);
    Admission.LegTurn c = admission.legTurn(1, context);
    Admission.LegTurn d = admission.legTurn(1, context);
    a.release(3);
    assertTrue(granted(b));
    assertTrue(granted(c));
    assertTrue(granted(d), "raised to 3: the three waiting ones run");
    Admission.LegTurn e = admission.legTurn(1, context);
    b.release(1);
    c.release(1);
    assertFalse(granted(e), "lowered to 1: d still runs, nothing new starts");
    d.release(1);
    assertTrue(granted(e));
  }
}
