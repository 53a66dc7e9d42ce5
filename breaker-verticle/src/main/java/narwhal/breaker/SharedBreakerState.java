package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.Counter;
import io.vertx.core.shareddata.Lock;
import io.vertx.core.shareddata.SharedData;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.SharedState;
import narwhal.common.bus.StateVersion;
import narwhal.common.fault.FailureClass;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The breaker's cluster state in Vert.x {@code SharedData} (docs/architecture.md#what-lives-in-the-cluster), the same calls whether the cluster manager
 * is Hazelcast or the single-node local one, every one of them run under the {@link SharedStateGuard}:
 * <ul>
 *   <li>{@code narwhal.engine-state}: iid → {@link EngineStateEvent} JSON, plus the {@link FleetHoldEvent};</li>
 *   <li>counters {@code narwhal.streak.<iid>.<class>}: consecutive failures of one class, counted by every replica;</li>
 *   <li>leases {@code probe.<iid>} in map {@code narwhal.leases}: one probe of an engine at a time, cluster-wide;</li>
 *   <li>map {@code narwhal.replicas}: each replica's {@link ReplicaRoster} entry, written with a time to live.</li>
 * </ul>
 * A lease is a map entry {@code {by, until}} taken by compare-and-set and removed by its holder; one whose holder froze,
 * died or lost the entry's release in a partition's migration runs out at {@code until} and is taken over, so no
 * replica can block probes for good (Hazelcast's own locks have no such end).
 */
final class SharedBreakerState implements AdminHandler.SharedReads {
  /** Map of the admin proofs' nonces taken by any replica, each kept while its proof could still be fresh. */
  static final String ADMIN_NONCES = "narwhal.admin-nonces";
  static final String LEASES = "narwhal.leases";
  static final String REPLICAS = "narwhal.replicas";
  /** Map holding one entry, {@link #STARTED_KEY}: written by the replica that started the cluster's shared state. */
  static final String CLUSTER = "narwhal.cluster";
  static final String STARTED_KEY = "started";
  /** The map vertx-hazelcast keeps every {@code SharedData} counter in (key: the counter's name, value: a Long). */
  static final String COUNTER_MAP = "__vertx.map.counter";
  /** Compare-and-set tries of one write before it gives up (the next resync writes again). */
  private static final int CAS_TRIES = 4;
  /** The lock a replica decides under when the shared state cannot be reached: its own book is all there is. */
  private static final Lock LOCAL_ONLY = () -> { };

  private final SharedData data;
  private final SharedStateGuard guard;
  private final Map<String, Future<AsyncMap<String, ?>>> maps = new HashMap<>();
  private final Map<String, Counter> counters = new HashMap<>();
  private final java.util.function.LongSupplier wallClockMs;
  private final String holder = java.util.UUID.randomUUID().toString().substring(0, 8);
  private final ClusterSeal seal;
  private long leases;

  /** @param data the cluster's shared data (the seam where tests make operations fail or stall) */
  SharedBreakerState(SharedData data, SharedStateGuard guard) {
    this(data, guard, System::currentTimeMillis);
  }

  /** @param wallClockMs the clock leases run out by (epoch ms, shared by the replicas) */
  SharedBreakerState(SharedData data, SharedStateGuard guard, java.util.function.LongSupplier wallClockMs) {
    this(data, guard, wallClockMs, ClusterSeal.OPEN);
  }

  /** @param seal signs every value this replica writes and refuses those that do not verify (docs/operations.md#threat-model) */
  SharedBreakerState(SharedData data, SharedStateGuard guard, java.util.function.LongSupplier wallClockMs, ClusterSeal seal) {
    this.seal = seal;
    this.data = data;
    this.guard = guard;
    this.wallClockMs = wallClockMs;
  }

  /**
   * Writes an engine's state unless the map holds a newer version (a compare-and-set, so two replicas writing at once
   * keep the newer one); the version the map holds afterwards, this replica's or the newer one found.
   */
  Future<EngineStateEvent> putState(EngineStateEvent event) {
    return putIfNewer(event.iid(), event.toJson(), event.version(), CAS_TRIES)
        .map(held -> held == null ? event : EngineStateEvent.fromJson(held));
  }

  Future<Void> putFleetHold(FleetHoldEvent event) {
    return putIfNewer(SharedState.FLEET_HOLD_KEY, event.toJson(), event.version(), CAS_TRIES).mapEmpty();
  }

  /** Null when {@code json} is what the map holds now, else the newer entry the map keeps. */
  private Future<JsonObject> putIfNewer(String key, JsonObject json, StateVersion version, int tries) {
    String text = seal.seal(SharedState.ENGINE_STATE_MAP, key, json).encode();
    return guard.run(() -> this.<String>map(SharedState.ENGINE_STATE_MAP).compose(m -> m.get(key).compose(current -> {
      if (current == null) return m.putIfAbsent(key, text).map(raced -> raced == null ? CasStep.WRITTEN : CasStep.RACED);
      JsonObject held = seal.openText(SharedState.ENGINE_STATE_MAP, key, current);
      // a forged entry is as good as absent: this replica's truth replaces it
      if (held == null) return m.replaceIfPresent(key, current, text).map(done -> done ? CasStep.WRITTEN : CasStep.RACED);
      if (!version.newerThan(versionOf(held, wallClockMs.getAsLong()))) return Future.succeededFuture(held.encode().equals(text) ? CasStep.WRITTEN : new CasStep(held));
      return m.replaceIfPresent(key, current, text).map(done -> done ? CasStep.WRITTEN : CasStep.RACED);
    }))).compose(step -> step != CasStep.RACED ? Future.succeededFuture(step.newer())
        : tries > 1 ? putIfNewer(key, json, version, tries - 1)
        : Future.failedFuture("lost " + CAS_TRIES + " write races for " + key));
  }

  /** The entry's version; {@link StateVersion#NONE} for one further ahead than {@link ClockBound} allows (forged: overwritten). */
  private static StateVersion versionOf(JsonObject json, long nowMs) {
    Number changed = json.getValue("changed_ms") instanceof Number n ? n : 0;
    if (ClockBound.ahead(changed.longValue(), nowMs)) return StateVersion.NONE;
    return new StateVersion(changed.longValue(), json.getValue("origin") instanceof String o ? o : "");
  }

  /** One try of a compare-and-set: written, lost a race (try again), or found a newer entry. */
  private record CasStep(JsonObject newer) {
    static final CasStep WRITTEN = new CasStep(null);
    static final CasStep RACED = new CasStep(new JsonObject());
  }

  /** Every entry of the state map, parsed: engine states and the fleet hold (a forged entry is left out). */
  Future<List<JsonObject>> states() {
    return guard.run(() -> this.<String>map(SharedState.ENGINE_STATE_MAP).compose(AsyncMap::entries)).map(entries -> {
      List<JsonObject> out = new ArrayList<>();
      entries.forEach((key, text) -> {
        JsonObject json = seal.openText(SharedState.ENGINE_STATE_MAP, key, text);
        if (json != null) out.add(json);
      });
      return out;
    });
  }

  /**
   * Marks the cluster's shared state as started, unless a replica did before (a put-if-absent, so of two replicas
   * starting at once one only is first); true when this replica is the one that started it. An empty state map alone
   * does not tell: the first replica may have started it with no decision to restore.
   */
  Future<Boolean> markStarted(String replica, long atMs) {
    String mine = seal.seal(CLUSTER, STARTED_KEY, new JsonObject().put("by", replica).put("at_ms", atMs)).encode();
    return guard.run(() -> this.<String>map(CLUSTER).compose(m -> m.putIfAbsent(STARTED_KEY, mine).compose(held -> held == null
        ? Future.succeededFuture(true)
        : seal.openText(CLUSTER, STARTED_KEY, held) != null ? Future.succeededFuture(false) : m.replaceIfPresent(STARTED_KEY, held, mine))));
  }

  /**
   * Records an admin proof's nonce cluster-wide for {@code ttlMs}: true when no replica took it before. When the
   * shared state does not answer, true: the replica's own record of nonces decides alone then.
   */
  @Override
  public Future<Boolean> firstUse(String nonce, long ttlMs) {
    return guard.run(() -> this.<String>map(ADMIN_NONCES).compose(m -> m.putIfAbsent(nonce, holder, ttlMs)))
        .map(held -> held == null).otherwise(true);
  }

  /** One engine's shared state, or null when no replica has written one. */
  @Override
  public Future<JsonObject> state(String iid) {
    return guard.run(() -> this.<String>map(SharedState.ENGINE_STATE_MAP).compose(m -> m.get(iid)))
        .map(text -> seal.openText(SharedState.ENGINE_STATE_MAP, iid, text));
  }

  /** Counts one more failure of class {@code c}; the cluster-wide streak, this failure included. */
  Future<Integer> increment(String iid, FailureClass c) {
    return guard.run(() -> counter(iid, c).compose(Counter::incrementAndGet)).map(Long::intValue);
  }

  Future<Integer> streak(String iid, FailureClass c) {
    return guard.run(() -> counter(iid, c).compose(Counter::get)).map(Long::intValue);
  }

  /**
   * Every streak of {@code iids}, keyed by {@link #streakName}, as one guarded read when {@code clustered}: the map Vert.x
   * keeps its Hazelcast counters in ({@value #COUNTER_MAP}) read whole, one query, instead of one operation per engine and
   * failure class (6 per engine: 6,000 at 1,000 engines, each creating its counter with a blocking put on the event loop
   * the first time, which held a joining replica's loop for seconds). A counter no replica has counted reads as 0, as
   * {@link Counter#get} gives it. Single node: each counter, read locally.
   */
  Future<Map<String, Integer>> streaks(List<String> iids, boolean clustered) {
    if (!clustered) {
      Map<String, Integer> out = new HashMap<>();
      List<Future<Integer>> reads = new ArrayList<>();
      for (String iid : iids) {
        for (FailureClass c : FailureClass.values()) reads.add(streak(iid, c).onSuccess(n -> out.put(streakName(iid, c), n)));
      }
      return Future.join(reads).map(out);
    }
    return guard.run(() -> data.<String, Object>getAsyncMap(COUNTER_MAP).compose(AsyncMap::entries)).map(entries -> {
      Map<String, Integer> out = new HashMap<>();
      for (String iid : iids) {
        for (FailureClass c : FailureClass.values()) {
          String name = streakName(iid, c);
          out.put(name, entries.get(name) instanceof Number n ? n.intValue() : 0);
        }
      }
      return out;
    });
  }

  /** The name of the counter of an engine's streak of one failure class. */
  static String streakName(String iid, FailureClass c) {
    return "narwhal.streak." + iid + "." + c.wireName();
  }

  /** Sets a streak back to zero (a success of the kind that proves the class healthy, a readmission). */
  Future<Void> reset(String iid, FailureClass c) {
    return guard.run(() -> counter(iid, c).compose(counter -> resetFrom(counter, 3)));
  }

  private static Future<Void> resetFrom(Counter counter, int tries) {
    return counter.get().compose(v -> v == 0 ? Future.succeededFuture(true) : counter.compareAndSet(v, 0))
        .compose(done -> done || tries <= 1 ? Future.<Void>succeededFuture() : resetFrom(counter, tries - 1));
  }

  /**
   * The engine's probe lock; empty when another replica holds it. When the shared state cannot be reached the replica
   * probes on its own (a lock whose release does nothing): it keeps deciding on its local book.
   */
  Future<Optional<Lock>> probeLock(String iid, long leaseMs) {
    return lease("probe." + iid, leaseMs);
  }

  private Future<Optional<Lock>> lease(String name, long leaseMs) {
    long now = wallClockMs.getAsLong();
    String mine = seal.seal(LEASES, name, new JsonObject().put("by", holder + "#" + (++leases)).put("until", now + leaseMs)).encode();
    Supplier<Future<Boolean>> take = () -> this.<String>map(LEASES).compose(m -> m.putIfAbsent(name, mine).compose(held -> {
      if (held == null) return Future.succeededFuture(true);
      JsonObject current = seal.openText(LEASES, name, held);
      long until = current == null || !(current.getValue("until") instanceof Number n) ? 0 : n.longValue();
      if (until > now && !ClockBound.ahead(until, now, leaseMs)) return Future.succeededFuture(false);
      return m.replaceIfPresent(name, held, mine);
    }));
    return guard.run(take)
        .map(taken -> taken ? Optional.<Lock>of(() -> guard.run(() -> this.<String>map(LEASES).compose(m -> m.removeIfPresent(name, mine)))
            .onFailure(err -> { })) : Optional.<Lock>empty())
        .otherwise(Optional.of(LOCAL_ONLY));
  }

  /** Writes this replica's roster entry, gone after {@code ttlMs} unless written again. */
  Future<Void> putReplica(String replica, JsonObject entry, long ttlMs) {
    return guard.run(() -> this.<String>map(REPLICAS).compose(m -> m.put(replica, seal.seal(REPLICAS, replica, entry).encode(), ttlMs)));
  }

  /** Every replica's roster entry, parsed (an entry that does not parse is left out). */
  Future<List<JsonObject>> replicas() {
    return guard.run(() -> this.<String>map(REPLICAS).compose(AsyncMap::entries)).map(entries -> {
      List<JsonObject> out = new ArrayList<>();
      entries.forEach((key, text) -> {
        JsonObject json = seal.openText(REPLICAS, key, text);
        if (json != null) out.add(json);
      });
      return out;
    });
  }

  Future<Void> removeReplica(String replica) {
    return guard.run(() -> this.<String>map(REPLICAS).compose(m -> m.remove(replica))).mapEmpty();
  }

  @SuppressWarnings("unchecked")
  private <V> Future<AsyncMap<String, V>> map(String name) {
    Future<AsyncMap<String, ?>> cached = maps.get(name);
    if (cached == null || !cached.succeeded()) {
      cached = data.<String, Object>getAsyncMap(name).map(m -> (AsyncMap<String, ?>) m);
      maps.put(name, cached);
    }
    return cached.map(m -> (AsyncMap<String, V>) m);
  }

  private Future<Counter> counter(String iid, FailureClass c) {
    String name = streakName(iid, c);
    Counter cached = counters.get(name);
    if (cached != null) return Future.succeededFuture(cached);
    return data.getCounter(name).onSuccess(counter -> counters.put(name, counter));
  }
}
