package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.function.Supplier;

/**
 * Reads of engines that run at most {@code limit} at once, the others started in the order asked as places free. A
 * replica starting in front of 1,000 engines asked every one of them for its {@code /v1/models} and {@code /metrics}
 * in one turn of its event loop: on a cold JVM that held the loop for seconds (Vert.x's blocked-thread warnings, 4.6 s
 * on a joining replica), so its answers to peers and to {@code /ready} waited behind them; a bound on reads under way
 * spreads them over many turns (a bound per turn alone, tried, had the first replica ready 1–3 s later: thousands of
 * connections opening at once). A read holds its place at most {@code holdMs}: an engine that does not answer (each
 * read held to its timeout) then holds back the others for that long, not for its whole timeout. Event-loop confined
 * (use it from one context): not thread-safe.
 */
final class ReadQueue {
  /** Engine reads ({@code /metrics}, {@code /v1/models}) a replica has under way at most, of each kind. */
  static final int ENGINE_READS_AT_ONCE = 32;
  /** How long an engine read holds its place at most. */
  static final long ENGINE_READ_HOLD_MS = 100;
  private final Vertx vertx;
  private final int limit;
  private final long holdMs;
  private final Queue<Runnable> waiting = new ArrayDeque<>();
  private int holding;
  private boolean draining;

  /** A queue of engine reads: {@value #ENGINE_READS_AT_ONCE} under way, each holding its place {@value #ENGINE_READ_HOLD_MS} ms at most. */
  static ReadQueue forEngineReads(Vertx vertx) {
    return new ReadQueue(vertx, ENGINE_READS_AT_ONCE, ENGINE_READ_HOLD_MS);
  }

  ReadQueue(Vertx vertx, int limit, long holdMs) {
    if (limit < 1) throw new IllegalArgumentException("limit must be at least 1: " + limit);
    if (holdMs < 1) throw new IllegalArgumentException("holdMs must be at least 1: " + holdMs);
    this.vertx = vertx;
    this.limit = limit;
    this.holdMs = holdMs;
  }

  /** Runs {@code read} now if fewer than the limit hold a place, else once one frees; its outcome is the read's. */
  <T> Future<T> submit(Supplier<Future<T>> read) {
    Promise<T> outcome = Promise.promise();
    waiting.add(() -> {
      holding++;
      boolean[] held = {true};
      Runnable release = () -> {
        if (held[0]) {
          held[0] = false;
          holding--;
          drain();
        }
      };
      long timer = vertx.setTimer(holdMs, t -> release.run());
      Future<T> started;
      try {
        started = read.get();
      } catch (RuntimeException e) {
        started = Future.failedFuture(e);
      }
      started.onComplete(done -> {
        vertx.cancelTimer(timer);
        outcome.handle(done);
        release.run();
      });
    });
    drain();
    return outcome.future();
  }

  /** Starts waiting reads while fewer than the limit hold a place; a read that ends at once is followed by the loop, not a call deeper. */
  private void drain() {
    if (draining) return;
    draining = true;
    try {
      while (holding < limit && !waiting.isEmpty()) waiting.poll().run();
    } finally {
      draining = false;
    }
  }

  /** Reads not yet started: for tests. */
  int waiting() {
    return waiting.size();
  }
}
