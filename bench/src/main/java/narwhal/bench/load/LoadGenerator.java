package narwhal.bench.load;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.PoolOptions;
import narwhal.bench.probe.JvmProbe;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The load generator: its own Vert.x instance (two event loops), HTTP clients with large pools, and two
 * shapes of load. {@link #closedLoop} keeps N requests in flight back to back (warm-up, then a measured
 * window); {@link #ramp} opens streams at a fixed rate up to a total and lets each run to its end;
 * {@link #openLoop} starts requests at Poisson arrival times, whether or not earlier ones have ended. The
 * command-line thread waits for a phase to finish; the requests themselves run on the event loops.
 */
public final class LoadGenerator implements AutoCloseable {
  private final Vertx vertx;
  private final AtomicInteger inFlight = new AtomicInteger();

  public LoadGenerator() {
    this.vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
  }

  public Vertx vertx() {
    return vertx;
  }

  /** A keep-alive HTTP/1.1 client allowing {@code maxConnections} per host; no wait-queue bound. */
  public HttpClientAgent client(int maxConnections) {
    return vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true).setConnectTimeout(30_000),
        new PoolOptions().setHttp1MaxSize(maxConnections).setMaxWaitQueueSize(-1));
  }

  /** Requests started and not yet ended, across every phase. */
  public int inFlight() {
    return inFlight.get();
  }

  /**
   * Runs {@code concurrency} workers, each starting its next request when the last one ends, for
   * {@code warmupS + measureS} seconds; counts the exchanges inside the measured window, then waits (at most
   * {@code drainS}) for the ones still running.
   */
  public RunStats closedLoop(String label, int concurrency, double warmupS, double measureS, double drainS, Work work) {
    return closedLoop(label, concurrency, warmupS, measureS, drainS, work, null);
  }

  /** Told when a measured window opens and closes (on the command-line thread), e.g. to read CPU counters. */
  public interface Window {
    void opened();

    void closed();
  }

  /** As above; {@code window} (may be null) is told when the measured window opens and closes. */
  public RunStats closedLoop(String label, int concurrency, double warmupS, double measureS, double drainS, Work work,
                             Window window) {
    long start = System.nanoTime();
    long windowStart = start + (long) (warmupS * 1e9);
    long windowEnd = windowStart + (long) (measureS * 1e9);
    RunStats stats = new RunStats(label).window(windowStart, windowEnd);
    CountDownLatch finished = new CountDownLatch(concurrency);
    for (int i = 0; i < concurrency; i++) {
      Context ctx = vertx.getOrCreateContext();
      ctx.runOnContext(v -> next(ctx, work, windowEnd, stats::add, finished));
    }
    if (window != null) {
      sleepUntil(windowStart);
      window.opened();
      sleepUntil(windowEnd);
      window.closed();
    }
    await(finished, measureS + warmupS + drainS);
    return stats;
  }

  private static void sleepUntil(long nanos) {
    long ms = (nanos - System.nanoTime()) / 1_000_000;
    if (ms > 0) JvmProbe.sleep(ms);
  }

  private void next(Context ctx, Work work, long end, Consumer<Exchange> sink, CountDownLatch finished) {
    if (System.nanoTime() >= end) {
      finished.countDown();
      return;
    }
    inFlight.incrementAndGet();
    Future<Exchange> f = work.start();
    boolean sync = f.isComplete();
    f.onComplete(ar -> {
      inFlight.decrementAndGet();
      if (ar.succeeded()) sink.accept(ar.result());
      if (sync) ctx.runOnContext(v -> next(ctx, work, end, sink, finished));
      else next(ctx, work, end, sink, finished);
    });
  }

  /**
   * Opens {@code total} requests at {@code perSecond}, in batches every 10 ms, and waits (at most
   * {@code maxS}) until every one has ended. {@code open} counts those running now.
   */
  public RunStats ramp(String label, int total, double perSecond, double maxS, Work work, AtomicInteger open, AtomicLong peak) {
    RunStats stats = new RunStats(label);
    CountDownLatch finished = new CountDownLatch(total);
    int[] started = {0};
    long t0 = System.nanoTime();
    Context ctx = vertx.getOrCreateContext();
    ctx.runOnContext(v -> vertx.setPeriodic(10, id -> {
      long due = Math.min(total, (long) Math.ceil((System.nanoTime() - t0) / 1e9 * perSecond));
      while (started[0] < due) {
        started[0]++;
        int n = open.incrementAndGet();
        peak.accumulateAndGet(n, Math::max);
        inFlight.incrementAndGet();
        work.start().onComplete(ar -> {
          inFlight.decrementAndGet();
          open.decrementAndGet();
          if (ar.succeeded()) stats.add(ar.result());
          finished.countDown();
        });
      }
      if (started[0] >= total) vertx.cancelTimer(id);
    }));
    await(finished, maxS);
    return stats;
  }

  /**
   * Open loop: requests arrive as a Poisson process of {@code perSecond} (exponential gaps from {@code seed}) for
   * {@code seconds}, each started at its arrival time (checked every 2 ms) whatever is still running, then waits (at
   * most {@code drainS}) for the last to end. Only exchanges that started {@code measureFromS} or later count.
   */
  public RunStats openLoop(String label, double perSecond, double seconds, double drainS, Work work, long seed, double measureFromS) {
    java.util.Random random = new java.util.Random(seed);
    List<Long> arrivals = new java.util.ArrayList<>();
    for (double t = -Math.log(1 - random.nextDouble()) / perSecond; t < seconds; t += -Math.log(1 - random.nextDouble()) / perSecond) {
      arrivals.add((long) (t * 1e9));
    }
    long t0 = System.nanoTime();
    long from = t0 + (long) (measureFromS * 1e9);
    RunStats stats = new RunStats(label);
    CountDownLatch finished = new CountDownLatch(arrivals.size());
    int[] started = {0};
    Context ctx = vertx.getOrCreateContext();
    ctx.runOnContext(v -> vertx.setPeriodic(2, id -> {
      long now = System.nanoTime() - t0;
      while (started[0] < arrivals.size() && arrivals.get(started[0]) <= now) {
        started[0]++;
        inFlight.incrementAndGet();
        work.start().onComplete(ar -> {
          inFlight.decrementAndGet();
          if (ar.succeeded() && ar.result().startNanos() >= from) stats.add(ar.result());
          finished.countDown();
        });
      }
      if (started[0] >= arrivals.size()) vertx.cancelTimer(id);
    }));
    await(finished, seconds + drainS);
    return stats;
  }

  private static void await(CountDownLatch latch, double seconds) {
    try {
      latch.await((long) Math.ceil(seconds * 1000), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Waits on the command-line thread for a future of the load generator (never call on an event loop). */
  public static <T> T join(Future<T> future, double seconds) {
    try {
      return future.toCompletionStage().toCompletableFuture().get((long) Math.ceil(seconds * 1000), TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException(e.getCause() == null ? e.getMessage() : e.getCause().getMessage(), e.getCause());
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("no answer within " + seconds + " s");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted");
    }
  }

  @Override
  public void close() {
    join(vertx.close(), 30);
  }
}
