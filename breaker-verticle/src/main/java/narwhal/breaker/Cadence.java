package narwhal.breaker;

import io.vertx.core.Vertx;

import java.util.function.LongSupplier;

/**
 * A task run again and again at an interval read afresh at every tick (docs/operations.md#breaker-states), so that a
 * reload changes the cadence from the next tick without restarting the count: {@link #arm()} on a running cadence only
 * brings the next tick forward when the interval got shorter, never postpones one that is due.
 */
final class Cadence {
  private final Vertx vertx;
  private final LongSupplier intervalMs;
  private final Runnable task;
  private long timer = -1;
  private long lastTickMs;
  private long dueMs;

  Cadence(Vertx vertx, LongSupplier intervalMs, Runnable task) {
    this.vertx = vertx;
    this.intervalMs = intervalMs;
    this.task = task;
  }

  /** Starts the cadence, or, running, takes a changed interval: the next tick comes no later than the last one plus it. */
  void arm() {
    long now = nowMs();
    if (timer < 0) {
      lastTickMs = now;
      schedule(intervalMs.getAsLong());
      return;
    }
    long due = lastTickMs + intervalMs.getAsLong();
    if (due < dueMs) {
      vertx.cancelTimer(timer);
      schedule(Math.max(1, due - now));
    }
  }

  void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
    timer = -1;
  }

  private void schedule(long delayMs) {
    dueMs = nowMs() + delayMs;
    timer = vertx.setTimer(delayMs, this::tick);
  }

  private void tick(long id) {
    if (id != timer) return;
    lastTickMs = nowMs();
    schedule(intervalMs.getAsLong());
    task.run();
  }

  private static long nowMs() {
    return System.nanoTime() / 1_000_000;
  }
}
