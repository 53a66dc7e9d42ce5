package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.function.Supplier;

/**
 * Reads of engines that run at most {@code limit} at once, the others started in the order asked as those end. A
 * replica starting in front of 1,000 engines asked every one of them for its {@code /v1/models} and {@code /metrics}
 * in one turn of its event loop: on a cold JVM that held the loop for seconds (Vert.x's blocked-thread warnings, 4.6 s
 * on a joining replica), so its answers to peers and to {@code /ready} waited behind them. Bounded, the reads go out
 * over many turns and the loop answers in between. Event-loop confined: not thread-safe.
 */
final class ReadQueue {
  private final int limit;
  private final Queue<Runnable> waiting = new ArrayDeque<>();
  private int running;
  private boolean draining;

  ReadQueue(int limit) {
    if (limit < 1) throw new IllegalArgumentException("limit must be at least 1: " + limit);
    this.limit = limit;
  }

  /** Runs {@code read} now if fewer than the limit run, else once its turn comes; its outcome is the read's. */
  <T> Future<T> submit(Supplier<Future<T>> read) {
    Promise<T> outcome = Promise.promise();
    waiting.add(() -> {
      running++;
      Future<T> started;
      try {
        started = read.get();
      } catch (RuntimeException e) {
        started = Future.failedFuture(e);
      }
      started.onComplete(done -> {
        running--;
        outcome.handle(done);
        drain();
      });
    });
    drain();
    return outcome.future();
  }

  /** Starts waiting reads while fewer than the limit run; a read that ends at once is followed by the loop, not a call deeper. */
  private void drain() {
    if (draining) return;
    draining = true;
    try {
      while (running < limit && !waiting.isEmpty()) waiting.poll().run();
    } finally {
      draining = false;
    }
  }

  /** Reads running and waiting: for {@code /narwhal/state} and tests. */
  int pending() {
    return running + waiting.size();
  }
}
