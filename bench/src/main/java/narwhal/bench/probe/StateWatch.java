package narwhal.bench.probe;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;

/**
 * Watches several replicas' {@code /narwhal/state} at once: each is polled every {@link #INTERVAL_MS} ms (one poll in
 * flight per replica) and {@link #when} tells, per replica, when a condition on its state was first seen. A sighting
 * is bracketed: the change happened after the previous poll was sent and before the showing poll was answered, so its
 * estimate is the middle of that bracket and its error at most half the bracket. Everything runs on one context.
 */
public final class StateWatch implements AutoCloseable {
  public static final long INTERVAL_MS = 5;
  private static final long RETRY_MS = 100;

  private final Vertx vertx;
  private final Context context;
  private final List<HttpWork> replicas;
  private final long[] lastSent;
  private final List<Wait> waits = new ArrayList<>();
  private final LatencyHistogram roundTrips = new LatencyHistogram();
  private volatile boolean closed;

  /** When a condition was first seen on one replica: between these two instants ({@link System#nanoTime()}). */
  public record Sighting(long afterNanos, long beforeNanos) {
    public long estimate() {
      return afterNanos + (beforeNanos - afterNanos) / 2;
    }

    public long halfBracket() {
      return (beforeNanos - afterNanos) / 2;
    }
  }

  /** A condition awaited on every watched replica. */
  public final class Wait {
    private final Predicate<JsonObject> condition;
    private final long registered = System.nanoTime();
    private final Sighting[] seen;
    private final boolean[] skip;
    private final Promise<List<Sighting>> all = Promise.promise();

    private Wait(Predicate<JsonObject> condition, boolean[] skip) {
      this.condition = condition;
      this.seen = new Sighting[replicas.size()];
      this.skip = skip;
    }

    /** Whether replica {@code i} has shown it yet. */
    public boolean seenOn(int i) {
      return seen[i] != null;
    }

    /** The sightings, one per replica (null for a skipped one), once every watched replica has shown it. */
    public List<Sighting> await(long timeoutMs) {
      return LoadGenerator.join(all.future(), timeoutMs / 1000.0);
    }

    /** The sightings so far (null where not yet seen). */
    public List<Sighting> sofar() {
      return Arrays.asList(seen.clone());
    }

    private void offer(int i, JsonObject state, long sent, long answered) {
      if (all.future().isComplete() || skip[i] || seen[i] != null || !condition.test(state)) return;
      // the bracket opens at the last poll answered without the condition (a failed poll tells nothing), at the earliest
      // when the wait was registered
      seen[i] = new Sighting(Math.max(registered, lastSent[i]), answered);
      for (int r = 0; r < seen.length; r++) if (!skip[r] && seen[r] == null) return;
      all.tryComplete(Arrays.asList(seen.clone()));
    }
  }

  public StateWatch(Vertx vertx, List<HttpWork> replicas) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.replicas = List.copyOf(replicas);
    this.lastSent = new long[replicas.size()];
  }

  /** Starts polling every replica. */
  public StateWatch start() {
    context.runOnContext(v -> {
      for (int i = 0; i < replicas.size(); i++) poll(i);
    });
    return this;
  }

  /** Awaits {@code condition} on every replica not in {@code skip} (replica indexes). Register before causing the change. */
  public Wait when(Predicate<JsonObject> condition, int... skip) {
    boolean[] skipped = new boolean[replicas.size()];
    for (int s : skip) skipped[s] = true;
    Wait wait = new Wait(condition, skipped);
    Promise<Void> added = Promise.promise();
    context.runOnContext(v -> {
      waits.add(wait);
      added.complete();
    });
    LoadGenerator.join(added.future(), 5);
    return wait;
  }

  /** Round trips of the state polls so far. */
  public LatencyHistogram roundTrips() {
    return roundTrips;
  }

  private void poll(int i) {
    if (closed) return;
    long sent = System.nanoTime();
    Future<HttpWork.Reply> reply = replicas.get(i).get("/narwhal/state", 1_000);
    reply.onComplete(ar -> {
      long answered = System.nanoTime();
      long next = RETRY_MS;
      if (ar.succeeded() && ar.result().status() == 200) {
        roundTrips.record(answered - sent);
        JsonObject state = ar.result().body().toJsonObject();
        for (Wait wait : waits) wait.offer(i, state, sent, answered);
        waits.removeIf(w -> w.all.future().isComplete());
        next = INTERVAL_MS;
        lastSent[i] = sent;
      }
      vertx.setTimer(next, t -> poll(i));
    });
  }

  @Override
  public void close() {
    closed = true;
  }
}
