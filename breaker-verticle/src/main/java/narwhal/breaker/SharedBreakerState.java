package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.Counter;
import io.vertx.core.shareddata.Lock;
import narwhal.common.bus.SharedState;
import narwhal.common.fault.FailureClass;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The breaker's cluster state in Vert.x {@code SharedData} (docs/architecture.md#what-lives-in-the-cluster), the same calls whether the cluster manager
 * is Hazelcast or the single-node local one:
 * <ul>
 *   <li>{@code narwhal.engine-state}: iid → {@link EngineStateEvent} JSON, plus the fleet hold;</li>
 *   <li>counters {@code narwhal.streak.<iid>.<class>}: consecutive failures of one class, counted by every replica;</li>
 *   <li>locks {@code narwhal.probe.<iid>}: one probe of an engine at a time, cluster-wide;</li>
 *   <li>locks {@code narwhal.liveness.<iid>} and map {@code narwhal.liveness}: one liveness check of an engine per
 *   sweep interval, cluster-wide, so misses are not counted once per replica.</li>
 * </ul>
 */
final class SharedBreakerState {
  static final String LIVENESS_MAP = "narwhal.liveness";
  /** How long a replica waits for a lock another replica holds before it skips the probe or check. */
  static final long LOCK_WAIT_MS = 20;

  private final Vertx vertx;
  private final AsyncMap<String, String> states;
  private final AsyncMap<String, Long> liveness;
  private final Map<String, Counter> counters = new LinkedHashMap<>();

  private SharedBreakerState(Vertx vertx, AsyncMap<String, String> states, AsyncMap<String, Long> liveness) {
    this.vertx = vertx;
    this.states = states;
    this.liveness = liveness;
  }

  static Future<SharedBreakerState> open(Vertx vertx) {
    Future<AsyncMap<String, String>> states = vertx.sharedData().getAsyncMap(SharedState.ENGINE_STATE_MAP);
    Future<AsyncMap<String, Long>> liveness = vertx.sharedData().getAsyncMap(LIVENESS_MAP);
    return Future.all(states, liveness).map(v -> new SharedBreakerState(vertx, states.result(), liveness.result()));
  }

  Future<Void> putState(EngineStateEvent event) {
    return states.put(event.iid(), event.toJson().encode());
  }

  Future<Void> putFleetHold(JsonObject event) {
    return states.put(SharedState.FLEET_HOLD_KEY, event.encode());
  }

  /** Every entry of the state map, parsed: engine states and the fleet hold. */
  Future<List<JsonObject>> states() {
    return states.entries().map(entries -> {
      List<JsonObject> out = new ArrayList<>();
      entries.values().forEach(text -> out.add(new JsonObject(text)));
      return out;
    });
  }

  /** One engine's shared state, or null when no replica has written one. */
  Future<JsonObject> state(String iid) {
    return states.get(iid).map(text -> text == null ? null : new JsonObject(text));
  }

  /** Counts one more failure of class {@code c}; the cluster-wide streak, this failure included. */
  Future<Integer> increment(String iid, FailureClass c) {
    return counter(iid, c).compose(Counter::incrementAndGet).map(Long::intValue);
  }

  Future<Integer> streak(String iid, FailureClass c) {
    return counter(iid, c).compose(Counter::get).map(Long::intValue);
  }

  /** Sets a streak back to zero (a success of the kind that proves the class healthy, a readmission). */
  Future<Void> reset(String iid, FailureClass c) {
    return counter(iid, c).compose(counter -> resetFrom(counter, 3));
  }

  private static Future<Void> resetFrom(Counter counter, int tries) {
    return counter.get().compose(v -> v == 0 ? Future.succeededFuture(true) : counter.compareAndSet(v, 0))
        .compose(done -> done || tries <= 1 ? Future.<Void>succeededFuture() : resetFrom(counter, tries - 1));
  }

  /** The engine's probe lock, or a failed future when another replica holds it. */
  Future<Lock> probeLock(String iid) {
    return vertx.sharedData().getLockWithTimeout("narwhal.probe." + iid, LOCK_WAIT_MS);
  }

  Future<Lock> livenessLock(String iid) {
    return vertx.sharedData().getLockWithTimeout("narwhal.liveness." + iid, LOCK_WAIT_MS);
  }

  /** When a replica last checked an engine's liveness (epoch ms), 0 if never. */
  Future<Long> lastLivenessCheck(String iid) {
    return liveness.get(iid).map(at -> at == null ? 0L : at);
  }

  Future<Void> livenessChecked(String iid, long atMs) {
    return liveness.put(iid, atMs);
  }

  private Future<Counter> counter(String iid, FailureClass c) {
    String name = "narwhal.streak." + iid + "." + c.wireName();
    Counter cached = counters.get(name);
    if (cached != null) return Future.succeededFuture(cached);
    return vertx.sharedData().getCounter(name).onSuccess(counter -> counters.put(name, counter));
  }
}
