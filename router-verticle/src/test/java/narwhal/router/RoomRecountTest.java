package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.Role;
import narwhal.common.config.TenantConfig;
import narwhal.placement.ReadingsTable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Attack on issue 44: a saturated model's attempts start "as far as a reading shows room (... counted once per
 * reading)" (docs/operations.md#sharing-a-fleet). The room comes from a real placement table fed readings by hand;
 * a reading of an engine of another model says nothing new about this model's engines, so it must not let more of
 * this model's held attempts start against the same room.
 */
@Timeout(30)
class RoomRecountTest {
  private static final int QUEUE_MAX = 5;
  private static final int LIMIT = 100;
  private static final long NO_TIMEOUT = 600_000;
  private static final TenantConfig NORMAL = new TenantConfig("t", "", "", "normal", 1, 0, 0, 0);
  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final Admission admission = new Admission();
  private final ReadingsTable table = new ReadingsTable(List.of(
      new EngineConfig("P0", "http://127.0.0.1:1/P0", Role.PREFILL, "", "", "m"),
      new EngineConfig("D0", "http://127.0.0.1:1/D0", Role.DECODE, "", "", "m"),
      new EngineConfig("X0", "http://127.0.0.1:1/X0", Role.BOTH, "", "", "other")));

  RoomRecountTest() {
    admission.onEngineRoom(model -> table.room(model, QUEUE_MAX));
  }

  @AfterEach
  void close() {
    RouterHarness.await(vertx.close());
  }

  private Admission.LegTurn attempt(String model) {
    return admission.legTurn(LIMIT, context, new Admission.Lane(NORMAL, 10), model, NO_TIMEOUT, 1_000_000);
  }

  /** An attempt of the other model: a decision that looks at the held ones again (it starts itself, unbounded). */
  private void decide() {
    attempt("other");
    RouterHarness.await(Future.<Void>future(p -> context.runOnContext(v -> p.complete())));
  }

  @Test
  void aReadingOfAnotherModelsEngineDoesNotLetMoreStartAgainstTheSameRoom() {
    table.reading("P0", 0);
    table.reading("D0", QUEUE_MAX);
    table.reading("D0", QUEUE_MAX);
    table.reading("X0", 0);
    for (int i = 0; i < 6; i++) attempt("m");
    decide();
    assertEquals(1, admission.legsInFlight(), "D0's queue is full by two readings: only the other model's attempt runs");
    table.reading("D0", QUEUE_MAX - 1);
    decide();
    assertEquals(3, admission.legsInFlight(), "D0's reading shows room for one: one held attempt of m starts");
    for (int i = 0; i < 3; i++) {
      table.reading("X0", 0);
      decide();
    }
    assertEquals(3 + 3, admission.legsInFlight(), "X0's readings let the 3 attempts of the other model start and "
        + "none of m's: D0 was not read again, its room of one is spent (more would go to D0's full queue)");
  }

  @Test
  void oneReadingThatCatchesAFullQueueHoldsNothingTheNextOneConfirms() {
    table.reading("P0", 0);
    table.reading("D0", 0);
    table.reading("D0", QUEUE_MAX);
    for (int i = 0; i < 3; i++) attempt("m");
    decide();
    assertEquals(3 + 1, admission.legsInFlight(), "one reading caught D0's queue full (a burst's moment): nothing is held");
    table.reading("D0", QUEUE_MAX);
    for (int i = 0; i < 3; i++) attempt("m");
    decide();
    assertEquals(3 + 2, admission.legsInFlight(), "the next reading finds it full again: m's new attempts wait, the "
        + "other model's pass");
    table.reading("D0", QUEUE_MAX - 2);
    decide();
    assertEquals(3 + 3 + 2, admission.legsInFlight(), "a reading with room for two lets two of the held ones start "
        + "(and the third decision's own attempt of the other model)");
  }
}
