package narwhal.bench.load;

import io.vertx.core.Vertx;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One exchange started every period, whether or not the last has ended, until stopped: a client's steady view of a
 * server while something else is done to it (a crowd of idle connections, a connection cap). Exchanges go to a
 * {@link RunStats}; {@link #stop} waits for those still running.
 */
public final class PeriodicProbe {
  private final Vertx vertx;
  private final RunStats stats;
  private final AtomicInteger running = new AtomicInteger();
  private final long timer;

  public PeriodicProbe(Vertx vertx, String label, long periodMs, Work work) {
    this.vertx = vertx;
    this.stats = new RunStats(label);
    this.timer = vertx.setPeriodic(periodMs, id -> {
      running.incrementAndGet();
      work.start().onComplete(ar -> {
        running.decrementAndGet();
        if (ar.succeeded()) stats.add(ar.result());
      });
    });
  }

  /** Stops starting exchanges, waits up to {@code drainMs} for the running ones, and returns what all of them saw. */
  public RunStats stop(long drainMs) {
    vertx.cancelTimer(timer);
    long until = System.nanoTime() + drainMs * 1_000_000;
    while (running.get() > 0 && System.nanoTime() < until) narwhal.bench.probe.JvmProbe.sleep(10);
    return stats;
  }
}
