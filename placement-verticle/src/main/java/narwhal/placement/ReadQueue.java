package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.function.Supplier;

/**
 * Reads of engines started at most {@code perTurn} in one turn of the event loop, the others in the next turns, in the
 * order asked. A replica starting in front of 1,000 engines asked every one of them for its {@code /v1/models} and
 * {@code /metrics} in one turn: on a cold JVM that held the loop for seconds (Vert.x's blocked-thread warnings, 4.6 s on
 * a joining replica), so its answers to peers and to {@code /ready} waited behind them. Spread over turns, the loop
 * answers in between. Reads under way are not bounded: an engine that does not answer holds back no other's read
 * until its timeout. Event-loop confined (use it from one context): not thread-safe.
 */
final class ReadQueue {
  private final Vertx vertx;
  private final int perTurn;
  private final Queue<Runnable> waiting = new ArrayDeque<>();
  /** Reads started in this turn; a task queued for the next turn resets it (when {@link #nextTurn}). */
  private int startedThisTurn;
  private boolean nextTurn;

  ReadQueue(Vertx vertx, int perTurn) {
    if (perTurn < 1) throw new IllegalArgumentException("perTurn must be at least 1: " + perTurn);
    this.vertx = vertx;
    this.perTurn = perTurn;
  }

  /** Starts {@code read} in this turn if fewer than {@code perTurn} started in it, else in a later one; its outcome is the read's. */
  <T> Future<T> submit(Supplier<Future<T>> read) {
    Promise<T> outcome = Promise.promise();
    waiting.add(() -> {
      Future<T> started;
      try {
        started = read.get();
      } catch (RuntimeException e) {
        started = Future.failedFuture(e);
      }
      started.onComplete(outcome);
    });
    startSome();
    return outcome.future();
  }

  /** Starts waiting reads while fewer than {@code perTurn} started in this turn; the next turn starts the next ones. */
  private void startSome() {
    while (startedThisTurn < perTurn && !waiting.isEmpty()) {
      startedThisTurn++;
      waiting.poll().run();
    }
    if (startedThisTurn > 0 && !nextTurn) {
      nextTurn = true;
      vertx.runOnContext(v -> {
        nextTurn = false;
        startedThisTurn = 0;
        startSome();
      });
    }
  }

  /** Reads not yet started: for tests. */
  int waiting() {
    return waiting.size();
  }
}
