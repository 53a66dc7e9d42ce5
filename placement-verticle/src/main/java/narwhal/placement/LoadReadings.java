package narwhal.placement;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.circuitbreaker.CircuitBreaker;
import io.vertx.circuitbreaker.CircuitBreakerOptions;
import io.vertx.circuitbreaker.CircuitBreakerState;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.SharedData;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.LegsSent;
import narwhal.common.bus.Rendezvous;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.PlacementConfig;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Engine load for placement (docs/operations.md#placement), one view for the whole cluster, read once per interval
 * for all of it: each engine is owned by one live router replica, the first in the engine's rendezvous order over the
 * replicas (re-balanced as they come and go), which reads its {@code /metrics} when the reading is due and publishes
 * what it read in one message a round ({@link Addresses#PLACEMENT_LOADS}; a slow engine's answer in a later one:
 * {@link #SHARE_WITHIN_MS}) and to the shared map {@code narwhal.engine-load} (read whole only when a replica starts);
 * the next in that order take over an engine whose reading is overdue by half an interval each (a frozen, gone or cut-off owner). Every replica looks at its
 * engines every half interval, on the wall clock's multiples of it (the replicas' looks fall together), so an engine
 * whose owner went quiet is read again at most about 1.5 intervals after its last reading (two with clocks half an
 * interval apart). No lock and no read of the whole map
 * per round: an idle fleet costs each replica the engines it owns. Each replica also publishes on the cluster's
 * event bus ({@link LegsSent} on {@link Addresses#PLACEMENT_SENT}) how many legs it sent to each engine since that
 * engine's last reading, whenever that changed (checked every {@link #SENT_EXCHANGE_MS}) and at least once an
 * interval, so every replica counts the whole cluster's work between two readings; an idle replica publishes once an
 * interval and reads no shared map for it. Shared-state operations run under their own circuit
 * breaker ({@code cluster.shared_state}); while it is open the replica reads every engine itself and places on its own
 * view ({@code view: local} in {@code /narwhal/state}); back on the cluster's view it runs the hook it was given (the
 * prefix index is taken from a peer again). A failed reading makes the engine's load unknown; it is no
 * evidence for the breaker.
 */
final class LoadReadings {
  static final String LOADS = "narwhal.engine-load";
  /**
   * How often the replicas exchange their legs sent since the readings: far more often than a reading interval, or
   * between two readings every replica places as if the others sent nothing, and they herd on the engine that looked
   * idlest (3 replicas placing unique prompts by load measured 1.46× least_reserved's TTFT p50 with one exchange per
   * reading).
   */
  static final long SENT_EXCHANGE_MS = 100;
  /**
   * How long a reading may wait to be shared with the readings answered after it: a round's readings answered within
   * this go out in one message, a slower engine's in a later one.
   */
  static final long SHARE_WITHIN_MS = 50;
  /** The key a round touches to learn whether the shared map answers (one operation, not a read of the whole map). */
  private static final String TOUCH = "_touch";
  /** How much later than its timeout an answer may be handled, at least, and still be a reading ({@link #read}). */
  static final long STALE_SLACK_MS = 250;
  /** More readings than engines a fleet file may list are no replica's round. */
  private static final int MAX_READINGS_PER_MESSAGE = 100_000;

  private final Vertx vertx;
  private final SharedData data;
  private final Supplier<NarwhalConfig> config;
  private final PlacementTable table;
  private final String replica;
  private final Supplier<String> apiKey;
  private final HttpClient http;
  private final CircuitBreaker guard;
  private final MeterRegistry registry;
  private final Map<String, Counter> reads = new HashMap<>();
  /**
   * Engines this replica is reading now, with the entry each read is of (a slow engine is not read twice at once; an
   * engine a reload re-pointed is read at its new entry at once, not after the old one's read ends).
   */
  private final Map<String, EngineConfig> inFlight = new HashMap<>();
  /** The {@code /metrics} reads: a bounded number under way ({@link ReadQueue}). */
  private final ReadQueue queue;
  /** Engines whose newer shared reading this replica is taking now, having heard a count against it. */
  private final java.util.Set<String> catchingUp = new java.util.HashSet<>();
  private long timer = -1;
  private long sentTimer = -1;
  /** Readings taken and applied but not yet shared; the timer that shares them. */
  private final List<JsonObject> unshared = new ArrayList<>();
  private long shareTimer = -1;
  /** What this replica last published of its legs sent, and when; null before the first. */
  private Map<String, LegsSent.Count> lastSent;
  private long lastSentAtMs;
  /** {@link PlacementTable#sentVersion} when {@link #lastSent} was built. */
  private long lastSentVersion = -1;
  /** The other replicas' last {@link LegsSent}, by origin, with when it arrived (this replica's clock). */
  private final Map<String, Heard> heard = new HashMap<>();
  private MessageConsumer<Object> sentConsumer;
  private MessageConsumer<Object> loadsConsumer;
  /** Engines without a reading yet, with when this replica first saw them so. */
  private final Map<String, Long> unreadSince = new HashMap<>();
  /** When the last touch of the shared map began; whether one is under way. */
  private long touchedAtMs = Long.MIN_VALUE / 2;
  private boolean touching;
  /** Each engine's rank over {@link #rankedOver} (the members as last seen): hashed again only when they change. */
  private List<String> rankedOver = List.of();
  private final Map<String, Integer> ranks = new HashMap<>();

  /** Engines whose slowed reading a leg made due, with that reading's time and the round this replica first saw it so. */
  private final Map<String, Woken> woken = new HashMap<>();

  private record Heard(long atMs, Map<String, LegsSent.Count> engines) {
  }

  private record Woken(long readAtMs, long atMs) {
  }
  private volatile boolean clusterView = true;
  /** Run when the view goes from {@code local} back to {@code cluster}: the replica may have missed the prefix exchange. */
  private final Runnable backOnCluster;

  LoadReadings(Vertx vertx, SharedData data, Supplier<NarwhalConfig> config, PlacementTable table, String replica, Supplier<String> apiKey,
               MeterRegistry registry, Runnable backOnCluster) {
    this.vertx = vertx;
    this.data = data;
    this.backOnCluster = backOnCluster;
    this.config = config;
    this.table = table;
    this.replica = replica;
    this.apiKey = apiKey;
    this.registry = registry;
    this.queue = ReadQueue.forEngineReads(vertx);
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(1_000));
    NarwhalConfig cfg = config.get();
    this.guard = CircuitBreaker.create("narwhal-placement-loads", vertx, new CircuitBreakerOptions()
        .setTimeout(cfg.cluster().sharedState().operationTimeoutMs()).setMaxFailures(cfg.cluster().sharedState().failureThreshold())
        .setResetTimeout(cfg.cluster().sharedState().resetTimeoutMs()).setNotificationAddress(null));
  }

  /** (Re)arms the reading round at the configured interval; none under {@code least_reserved}. */
  void arm() {
    vertx.cancelTimer(timer);
    vertx.cancelTimer(sentTimer);
    timer = -1;
    sentTimer = -1;
    PlacementConfig placement = config.get().placement();
    if (PlacementConfig.LEAST_RESERVED.equals(placement.policy())) return;
    tick();
    if (vertx.isClustered()) {
      if (loadsConsumer == null) {
        loadsConsumer = vertx.eventBus().<Object>consumer(Addresses.PLACEMENT_LOADS,
            msg -> heardLoads(seal().open(Addresses.PLACEMENT_LOADS, msg.body())));
      }
      if (sentConsumer == null) {
        // typed Object: a body that is not a JSON object (a string, a buffer) is no message, not a ClassCastException
        sentConsumer = vertx.eventBus().<Object>consumer(Addresses.PLACEMENT_SENT,
            msg -> heardSent(LegsSent.fromJson(seal().open(Addresses.PLACEMENT_SENT, msg.body()))));
      }
      long every = Math.min(SENT_EXCHANGE_MS, placement.metricsIntervalMs());
      sentTimer = vertx.setPeriodic(every, t -> exchangeSent(config.get().placement().metricsIntervalMs()));
    }
    takeShared().onComplete(taken -> round(System.currentTimeMillis()));
  }

  /**
   * Runs a round at the next multiple of half the interval on the wall clock: every replica's rounds fall at the same
   * instants (within their clocks' difference), so a backup looks at an engine half an interval after its owner would
   * have read it, whatever the replica's start time. A one-shot timer each time: a periodic one drifts from the clock.
   */
  private void tick() {
    long half = Math.max(1, config.get().placement().metricsIntervalMs() / 2);
    long now = System.currentTimeMillis();
    long next = ((now + half / 4) / half + 1) * half;
    timer = vertx.setTimer(Math.max(1, next - now), t -> {
      tick();
      round(Math.min(next, System.currentTimeMillis()));
    });
  }

  void stop() {
    vertx.cancelTimer(timer);
    vertx.cancelTimer(sentTimer);
    vertx.cancelTimer(shareTimer);
    if (sentConsumer != null) sentConsumer.unregister();
    if (loadsConsumer != null) loadsConsumer.unregister();
    guard.close();
    http.close();
  }

  /** {@code cluster}: readings shared by every replica; {@code local}: the shared state cannot be reached. */
  String view() {
    return clusterView && guard.state() == CircuitBreakerState.CLOSED ? "cluster" : "local";
  }

  /**
   * One round, every half interval: the engines whose reading is due are read. While the shared state answers (the
   * cluster's view) those are the engines this replica owns — first in the engine's rendezvous order over the live
   * router replicas — whose reading is due, and those it takes over: the k-th in that order reads an engine whose
   * reading is overdue by k half intervals (its owner frozen, gone or cut off; with the rounds on the clock's half
   * intervals that is the owner's missed round plus half an interval). It writes what it read to the shared map (for
   * replicas that join or catch up) and publishes it in one message to the others. On the local view (the shared state
   * out of reach) it reads every engine whose reading is due itself. A guarded touch of the shared map, at most once an
   * interval and never awaited by the reads, tells which view holds: a touch that hangs on a killed or frozen member
   * (until the shared-state timeout) delays no reading.
   * <p>Ages count to the round's instant on the clock ({@code now}), not to when the loop ran it: an owner and its
   * backups then judge a reading at the same instants, and a backup's round run late does not read an engine its owner
   * reads in that same round (an answer a quarter interval late made the owner skip a round and a late backup round
   * read it beside the owner's next one).
   */
  private void round(long now) {
    List<EngineConfig> engines = config.get().engines();
    long interval = config.get().placement().metricsIntervalMs();
    touch(now, interval);
    if (!view().equals("cluster")) {
      for (EngineConfig e : engines) {
        EngineLoad known = table.load(e.iid());
        if ((known == null || now - known.readAtMs() >= due(known)) && begin(e)) {
          queue.submit(() -> read(e)).onComplete(done -> {
            inFlight.remove(e.iid(), e);
            if (done.succeeded() && table.lists(e)) table.applyLoad(done.result());
          });
        }
      }
      return;
    }
    ClusterView cluster = ClusterView.of(vertx);
    List<String> members = cluster.routers();
    String self = cluster.self();
    if (!members.equals(rankedOver) || ranks.size() > 2 * engines.size()) {
      ranks.clear();
      rankedOver = List.copyOf(members);
    }
    if (!unreadSince.isEmpty() || !woken.isEmpty()) {
      java.util.Set<String> listed = engines.stream().map(EngineConfig::iid).collect(java.util.stream.Collectors.toSet());
      unreadSince.keySet().retainAll(listed);
      woken.keySet().retainAll(listed);
    }
    long half = interval / 2;
    for (EngineConfig engine : engines) {
      EngineLoad known = table.load(engine.iid());
      long age = known == null ? now - unreadSince.computeIfAbsent(engine.iid(), k -> now) : now - known.readAtMs();
      int rank = ranks.computeIfAbsent(engine.iid(), iid -> Rendezvous.rank(iid, members, self));
      long wait = (known == null ? 0 : due(known)) + rank * half;
      if (age >= wait && rank > 0 && known != null && ownersTurn(engine.iid(), known, age, rank, now, half)) continue;
      if (age >= wait && begin(engine)) {
        queue.submit(() -> read(engine)).onComplete(done -> {
          inFlight.remove(engine.iid(), engine);
          // a read of an entry a reload removed or re-pointed meanwhile is no reading of what the fleet now lists: taken,
          // a re-pointed engine carried its old address's figures, and a removed one's reading (in the shared map too)
          // and read counters came back
          if (done.succeeded() && table.lists(engine)) taken(engine, idleSince(known, done.result()));
        });
      }
    }
  }

  /** Marks {@code engine} (this entry of it) as being read; false when a read of that same entry is under way. */
  private boolean begin(EngineConfig engine) {
    if (engine.equals(inFlight.get(engine.iid()))) return false;
    inFlight.put(engine.iid(), engine);
    return true;
  }

  /**
   * Whether a backup leaves an engine to its owner one round more: the engine idled (its reading slowed) and a leg made
   * its reading due before its slowed cadence would have. Every replica that knows of the leg finds the reading far
   * past the interval at once, so each of them read it in the same round as the owner (the busy phase of
   * {@code bench fleet-scale}: a producer's readings split 19 / 7 / 3 between its owner and both backups). The owner
   * hears of another replica's leg within an exchange ({@link #SENT_EXCHANGE_MS}), so it reads the engine in the round
   * this backup first saw the leg or in the next; the backup waits its rank's half intervals from the round after that.
   */
  private boolean ownersTurn(String iid, EngineLoad known, long age, int rank, long now, long half) {
    if (known.idleReadings() == 0 || age >= dueAfter(known.idleReadings()) + rank * half) {
      woken.remove(iid);
      return false;
    }
    Woken seen = woken.get(iid);
    if (seen == null || seen.readAtMs() != known.readAtMs()) {
      woken.put(iid, new Woken(known.readAtMs(), now));
      return true;
    }
    return now - seen.atMs() < (rank + 1) * half;
  }

  /**
   * A reading this replica took, shared with the others as soon as none of its reads is under way, and within
   * {@link #SHARE_WITHIN_MS} at the latest: a round's readings go out together, but one slow engine (up to
   * {@code metrics_timeout_s}) does not hold the others' back. Held back until the slowest answered, they reached the
   * backups after their next round, which read those engines beside their owner.
   */
  private void taken(EngineConfig engine, EngineLoad reading) {
    table.applyLoad(reading);
    unshared.add(reading.toJson().put("url", engine.url()));
    if (inFlight.isEmpty()) {
      vertx.cancelTimer(shareTimer);
      shareTimer = -1;
      share();
    } else if (shareTimer == -1) shareTimer = vertx.setTimer(SHARE_WITHIN_MS, t -> {
      shareTimer = -1;
      share();
    });
  }

  /**
   * Touches the shared map (one operation, not a read of the whole map) when the last touch began an interval ago and
   * none is under way: a failure turns the view to {@code local}, a success back to {@code cluster}.
   */
  private void touch(long now, long interval) {
    if (touching || now - touchedAtMs < interval * 9 / 10) return;
    touching = true;
    touchedAtMs = now;
    guard.<String>execute(() -> this.<String>map(LOADS).compose(m -> m.get(TOUCH))).onComplete(ar -> {
      touching = false;
      if (ar.failed()) {
        clusterView = false;
        return;
      }
      if (!clusterView) backOnCluster.run();
      clusterView = true;
    });
  }

  /**
   * Writes to the shared map and publishes the readings taken since the last share, each with the url it was read at
   * ({@link #asListed}).
   */
  private void share() {
    JsonArray readings = new JsonArray();
    for (JsonObject reading : unshared) {
      readings.add(reading);
      String iid = reading.getString("iid");
      guard.<Void>execute(() -> this.<String>map(LOADS).compose(m -> m.put(iid, seal().seal(LOADS, iid, reading).encode())));
    }
    unshared.clear();
    if (readings.isEmpty() || !vertx.isClustered()) return;
    vertx.eventBus().publish(Addresses.PLACEMENT_LOADS, seal().seal(Addresses.PLACEMENT_LOADS,
        new JsonObject().put("origin", replica).put("readings", readings)));
  }

  /** Another replica's readings: each applied when newer than the one held, and not from the future. */
  private void heardLoads(JsonObject message) {
    if (message == null || replica.equals(message.getString("origin")) || !view().equals("cluster")) return;
    if (!(message.getValue("readings") instanceof JsonArray readings)) return;
    int n = 0;
    for (Object item : readings) {
      if (++n > MAX_READINGS_PER_MESSAGE || !(item instanceof JsonObject json)) break;
      EngineLoad reading = asListed(json);
      if (reading != null) table.applyLoad(reading);
    }
    applyHeard();
  }

  /** Takes every engine's reading from the shared map once (a replica starting, or back on the cluster's view). */
  private Future<Void> takeShared() {
    return guard.<Map<String, String>>execute(() -> this.<String>map(LOADS).compose(AsyncMap::entries)).map(entries -> {
      for (EngineConfig engine : config.get().engines()) {
        EngineLoad shared = asListed(seal().openText(LOADS, engine.iid(), entries.get(engine.iid())));
        if (shared != null) table.applyLoad(shared);
      }
      return null;
    });
  }

  /**
   * How old {@code reading} may get before the engine is read again: its interval (longer while the engine idles, its
   * idle readings in a row; back to the configured one as soon as a replica places a leg on it) less a quarter of the
   * configured interval. A reading's age counts from its answer: an answer up to a quarter interval late keeps the
   * owner on its round, and the backups, who wait as much more, do not read beside an owner that slipped a round.
   */
  private long due(EngineLoad reading) {
    return dueAfter(table.legSince(reading.iid(), reading.readAtMs()) ? 0 : reading.idleReadings());
  }

  /** How old a reading taken after {@code idleReadings} idle ones in a row may get: its cadence less a quarter interval. */
  private long dueAfter(int idleReadings) {
    return config.get().placement().readingIntervalMs(idleReadings) - config.get().placement().metricsIntervalMs() / 4;
  }

  /**
   * {@code reading} counting the idle readings in a row: one more than {@code before}'s when both found the engine idle
   * and no replica placed a leg on it in between, else none (a leg or a change is read at the configured interval).
   */
  private EngineLoad idleSince(EngineLoad before, EngineLoad reading) {
    boolean idle = reading.idle() && before != null && before.idle() && !table.legSince(reading.iid(), before.readAtMs());
    return reading.afterIdle(idle ? before.idleReadings() + 1 : 0);
  }

  /**
   * One {@code GET /metrics}, bounded by {@code placement.metrics_timeout_s} and {@link EngineGet#MAX_BYTES}; a failure
   * is a failed reading. An answer handled longer after its request than the timeout
   * and a quarter interval (the replica was frozen, or its loop held, while the answer waited) is no reading: its
   * figures are that old, and stamped with the moment it was handled they would pass for the newest on every replica.
   */
  Future<EngineLoad> read(EngineConfig engine) {
    long timeout = config.get().placement().metricsTimeoutMs();
    long late = timeout + Math.max(STALE_SLACK_MS, config.get().placement().metricsIntervalMs() / 4);
    long asked = System.currentTimeMillis();
    String url = engine.url().endsWith("/") ? engine.url() + "metrics" : engine.url() + "/metrics";
    Future<Buffer> body = EngineGet.get(vertx, http, url, "narwhal-placement", apiKey.get(), timeout);
    return body.transform(ar -> {
      long now = System.currentTimeMillis();
      if (now - asked > late) return Future.failedFuture("a stale answer: handled " + (now - asked) + " ms after its request");
      EngineLoad reading;
      if (ar.failed() && ar.cause() instanceof EngineGet.Status status) {
        reading = EngineLoad.failed(engine.iid(), now, replica, "/metrics answered HTTP " + status.status);
      } else if (ar.failed()) {
        reading = EngineLoad.failed(engine.iid(), now, replica, "could not read /metrics: " + ar.cause().getMessage());
      } else {
        reading = EngineLoad.parse(engine.iid(), ar.result().toString(java.nio.charset.StandardCharsets.UTF_8), now, replica);
      }
      // an engine a reload removed meanwhile: no series of it comes back
      if (table.lists(engine)) counter(engine.iid(), reading.ok()).increment();
      return Future.succeededFuture(reading);
    });
  }

  /**
   * Publishes this replica's legs sent since each engine's reading when they changed or an interval has passed, and
   * applies the other replicas' counts heard within three intervals (a replica gone quiet, stopped or cut off, stops
   * counting). On the local view (the shared state out of reach) nothing is published and nothing heard counts.
   */
  private void exchangeSent(long interval) {
    long now = System.currentTimeMillis();
    if (!view().equals("cluster")) {
      heard.clear();
      return;
    }
    // the counts are built again only when a leg, a reading or the engine list may have changed them: an idle replica's
    // exchange every 100 ms walks no engine list
    long version = table.sentVersion();
    Map<String, LegsSent.Count> mine = version == lastSentVersion && lastSent != null ? lastSent : table.sentSinceReadings();
    lastSentVersion = version;
    if (!mine.equals(lastSent) || now - lastSentAtMs >= interval) {
      vertx.eventBus().publish(Addresses.PLACEMENT_SENT, seal().seal(Addresses.PLACEMENT_SENT, new LegsSent(replica, mine).toJson()));
      lastSent = mine;
      lastSentAtMs = now;
    }
    if (heard.values().removeIf(h -> now - h.atMs() >= interval * 3)) applyHeard();
  }

  private void heardSent(LegsSent sent) {
    if (sent == null || replica.equals(sent.origin()) || !view().equals("cluster")) return;
    heard.put(sent.origin(), new Heard(System.currentTimeMillis(), sent.engines()));
    applyHeard();
    // a count against a newer reading than this replica holds: the reading's own message may not have arrived yet
    // (or was lost), and a count only counts against the same reading, so until it does this replica would count
    // none of the sender's legs (nor the sender any of its own)
    sent.engines().forEach((iid, count) -> {
      if (count.readingMs() > table.readingMs(iid)) catchUp(iid);
    });
  }

  /** Takes the engine's reading from the shared map now (one at a time per engine), then the counts heard against it. */
  private void catchUp(String iid) {
    if (!catchingUp.add(iid)) return;
    guard.<String>execute(() -> this.<String>map(LOADS).compose(m -> m.get(iid))).onComplete(ar -> {
      catchingUp.remove(iid);
      EngineLoad shared = ar.succeeded() ? asListed(seal().openText(LOADS, iid, ar.result())) : null;
      if (shared == null || !iid.equals(shared.iid())) return;
      table.applyLoad(shared);
      applyHeard();
    });
  }

  private void applyHeard() {
    table.applyOthersSent(heard.values().stream().map(Heard::engines).toList());
  }

  /** Registers every engine's reading counters at zero (a series exists from start); drops removed engines' counters. */
  void track(List<EngineConfig> engines) {
    reads.entrySet().removeIf(entry -> {
      String iid = entry.getKey().substring(0, entry.getKey().lastIndexOf('/'));
      if (engines.stream().anyMatch(e -> e.iid().equals(iid))) return false;
      registry.remove(entry.getValue());
      return true;
    });
    engines.forEach(e -> {
      counter(e.iid(), true);
      counter(e.iid(), false);
    });
  }

  private Counter counter(String iid, boolean ok) {
    return reads.computeIfAbsent(iid + (ok ? "/ok" : "/failed"), k -> Counter.builder("narwhal.engine.load.reads")
        .description("readings of an engine's /metrics for placement, by outcome").tags("iid", iid, "outcome", ok ? "ok" : "failed")
        .register(registry));
  }

  private <V> Future<AsyncMap<String, V>> map(String name) {
    return data.getAsyncMap(name);
  }

  /**
   * Another replica's reading, or null when it is none of this replica's engines as it lists them: read at another url
   * than this replica has for the engine (a replica that has not applied a reload re-pointing it yet, or fleet files
   * that differ: its figures are another engine's), or forged ahead of the clock ({@link #bounded}). A reading that
   * names no url (a build before readings carried one) is taken.
   */
  private EngineLoad asListed(JsonObject json) {
    if (json == null) return null;
    String url = json.getValue("url") instanceof String u ? u : null;
    if (url != null && !url.equals(table.url(json.getString("iid", "")))) return null;
    return bounded(EngineLoad.fromJson(json));
  }

  /**
   * The reading, or null when it was taken further ahead of this replica's clock than {@link ClockBound} allows: forged
   * (it would look fresh for good and never be read again), so it is read again and overwritten.
   */
  private static EngineLoad bounded(EngineLoad reading) {
    return reading == null || ClockBound.ahead(reading.readAtMs(), System.currentTimeMillis()) ? null : reading;
  }

  private ClusterSeal seal() {
    return ClusterSeal.of(vertx);
  }
}
