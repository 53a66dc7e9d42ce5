package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.function.Supplier;

/** Awaiting a condition on a Vert.x timer in the placement tests (the test's own timeout fails one that never holds). */
final class Await {
  private Await() {
  }

  /** Completes once {@code condition} holds, checked every 10 ms on {@code vertx}'s timers. */
  static Future<Void> until(Vertx vertx, Supplier<Boolean> condition) {
    Promise<Void> held = Promise.promise();
    vertx.setPeriodic(0, 10, id -> {
      if (condition.get()) {
        vertx.cancelTimer(id);
        held.tryComplete();
      }
    });
    return held.future();
  }
}
