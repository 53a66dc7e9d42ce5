package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.Set;
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
}
