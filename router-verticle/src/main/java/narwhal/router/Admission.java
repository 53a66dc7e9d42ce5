package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which inference requests a replica admits: the in-flight requests under {@code serving.max_in_flight} (one count
 * across endpoints and event loops), and the stop sequence (docs/configuration.md {@code serving.drain_delay_s}). A request
 * counts from its admission to its lifecycle's terminal outcome, whatever reservations it holds between its legs.
 * Draining: readiness is false but requests are still admitted, so the balancer's health check takes the replica
 * out first. Closed: new requests are refused as {@code shutting_down}; {@link #idle} completes when the last
 * request in flight has ended; {@link #cutAll} ends those still running when the graceful timeout is over. Thread-safe:
 * the count and the closed flag are one atomic word.
 * <p>An admitted request's attempts then take {@link LegTurn}s: at most {@code serving.max_legs_in_flight} attempts of
 * the replica (every prompt of a batch is one) run legs against engines at once, the others wait in arrival order
 * before their prefill (or their one leg) is sent, so a waiting prompt holds no KV on any engine.
 */
final class Admission {
  /** What {@link #admit} decided. */
  enum Verdict { ADMITTED, OVERLOADED, SHUTTING_DOWN }

  private static final int CLOSED = 1 << 30;
  private final AtomicInteger state = new AtomicInteger();
  private final Promise<Void> idle = Promise.promise();
  private final Set<Cuttable> running = ConcurrentHashMap.newKeySet();
  private volatile boolean draining;

  /** An admitted request that the end of a graceful stop can end with its terminal outcome ({@link #cutAll}). */
  interface Cuttable {
    /** Ends the request as cut by the stop; called from any thread, idempotent. */
    void cut();
  }

  private final ArrayDeque<LegTurn> legQueue = new ArrayDeque<>();
  /** Guarded by {@link #legQueue}. */
  private int legsRunning;
  private int legsWaiting;

  /** Counts the request in when the replica is open and under {@code limit}. */
  Verdict admit(int limit) {
    int before = state.getAndUpdate(n -> (n & CLOSED) != 0 || n >= limit ? n : n + 1);
    if ((before & CLOSED) != 0) return Verdict.SHUTTING_DOWN;
    return before >= limit ? Verdict.OVERLOADED : Verdict.ADMITTED;
  }

  /** An admitted request has reached its terminal outcome. */
  void finished() {
    if (state.decrementAndGet() == CLOSED) idle.tryComplete();
  }

  /** {@code request} runs until {@link #untrack}: a stop past its graceful timeout cuts it. */
  void track(Cuttable request) {
    running.add(request);
  }

  void untrack(Cuttable request) {
    running.remove(request);
  }

  /** The graceful timeout is over: every request still running ends now, with its journal row; returns how many. */
  int cutAll() {
    int n = 0;
    for (Cuttable request : running) {
      request.cut();
      n++;
    }
    return n;
  }

  /** Readiness turns false; requests are still admitted. */
  void drain() {
    draining = true;
  }

  boolean draining() {
    return draining;
  }

  /** From now on new requests are refused; returns how many are in flight. Also drains. */
  int close() {
    draining = true;
    int before = state.getAndUpdate(n -> n | CLOSED);
    if ((before & ~CLOSED) == 0) idle.tryComplete();
    return before & ~CLOSED;
  }

  boolean closed() {
    return (state.get() & CLOSED) != 0;
  }

  /** Requests admitted and not yet ended. */
  int inFlight() {
    return state.get() & ~CLOSED;
  }

  /** Completes once the replica is closed and no request is in flight. */
  Future<Void> idle() {
    return idle.future();
  }

  /**
   * One attempt's turn to run legs, waiting from {@link #legTurn} until {@link #granted}, held until {@link #release}.
   * Its states change under the admission's lock; its grant completes on the context that asked for it.
   */
  final class LegTurn {
    private static final int WAITING = 0;
    private static final int RUNNING = 1;
    private static final int DONE = 2;
    private final Context context;
    private final Promise<Void> granted = Promise.promise();
    private int state = WAITING;

    private LegTurn(Context context) {
      this.context = context;
    }

    /** Completes when this attempt may send its legs; fails when it was released before its turn came. */
    Future<Void> granted() {
      return granted.future();
    }

    /**
     * The attempt ended (or no longer waits): its turn passes to the next waiting one, under {@code limit} as now
     * configured. Idempotent.
     */
    void release(int limit) {
      releaseTurn(this, limit);
    }
  }

  /** A turn for an attempt of an admitted request, granted at once while fewer than {@code limit} legs run. */
  LegTurn legTurn(int limit, Context context) {
    LegTurn turn = new LegTurn(context);
    List<LegTurn> go;
    synchronized (legQueue) {
      legQueue.add(turn);
      legsWaiting++;
      go = grantTurns(limit);
    }
    go.forEach(t -> t.context.runOnContext(v -> t.granted.tryComplete()));
    return turn;
  }

  private void releaseTurn(LegTurn turn, int limit) {
    List<LegTurn> go = List.of();
    boolean wasWaiting;
    synchronized (legQueue) {
      wasWaiting = turn.state == LegTurn.WAITING;
      if (wasWaiting) {
        legsWaiting--;
        // released waiting turns stay queued until polled: drop them when they outnumber those still waiting
        if (legQueue.size() > 2 * legsWaiting + 64) legQueue.removeIf(t -> t.state != LegTurn.WAITING && t != turn);
      } else if (turn.state == LegTurn.RUNNING) {
        legsRunning--;
        go = grantTurns(limit);
      }
      turn.state = LegTurn.DONE;
    }
    if (wasWaiting) turn.context.runOnContext(v -> turn.granted.tryFail(new CancellationException("released before its turn")));
    go.forEach(t -> t.context.runOnContext(v -> t.granted.tryComplete()));
  }

  /** Under the lock: the waiting turns that now run (those released while waiting are dropped on the way). */
  private List<LegTurn> grantTurns(int limit) {
    List<LegTurn> go = new ArrayList<>();
    while (legsRunning < limit && !legQueue.isEmpty()) {
      LegTurn next = legQueue.poll();
      if (next.state != LegTurn.WAITING) continue;
      next.state = LegTurn.RUNNING;
      legsWaiting--;
      legsRunning++;
      go.add(next);
    }
    return go;
  }

  /** Attempts running their legs now ({@code narwhal_legs_in_flight}). */
  int legsInFlight() {
    synchronized (legQueue) {
      return legsRunning;
    }
  }

  /** Attempts waiting for a turn ({@code narwhal_legs_waiting}). */
  int legsWaiting() {
    synchronized (legQueue) {
      return legsWaiting;
    }
  }
}
