package narwhal.sim;

/**
 * The engine's prefill compute as one serial lane: a request's prefill starts when the previous
 * one ends, which is where queueing in the time-to-first-token comes from. Wall-clock based
 * (latency is simulated with real timers); with a zero latency model it never delays.
 */
final class PrefillLane {

  private long freeAtNanos;

  /** Reserves {@code durationMs} of prefill; returns the delay in ms before it may start. */
  synchronized long reserve(double durationMs) {
    long now = System.nanoTime();
    if (durationMs <= 0) {
      return 0;
    }
    long start = Math.max(now, freeAtNanos);
    freeAtNanos = start + (long) (durationMs * 1_000_000);
    return (start - now) / 1_000_000;
  }
}
