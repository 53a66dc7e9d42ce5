package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.SharedState;
import narwhal.common.bus.StateVersion;
import narwhal.common.config.EngineConfig;
import narwhal.common.fault.FailureClass;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * Keeps this replica's {@link BreakerBook} and the cluster's shared state in step (docs/architecture.md#what-lives-in-the-cluster): writes and publishes
 * the states, fleet hold and streaks the book decides; takes over those other replicas decide, from
 * {@link Addresses#FLEET_CHANGED} and {@link Addresses#STREAK_CHANGED} as they happen and from the shared map at start
 * and every resync; ends each quarantine at the instant it carries. Every write is a compare-and-set on the versions,
 * so the map only ever moves to a newer state. While the {@link SharedStateGuard} is not closed, decisions are
 * published on this replica only; each resync writes every state of this book newer than the cluster's, so no decision
 * depends on one message or one write getting through. A resync reads the whole map: at start, when the guard closes,
 * at the first check (every interval) after the router members changed (one joined, left, or came back from a
 * partition's merge) or after a check came late (this replica was frozen or stalled: it may have missed messages), and
 * otherwise every {@link #SAFETY_RESYNC_MS} — not every interval, which was most of an idle replica's shared-map work.
 */
final class ClusterSync {
  private static final Logger LOG = Logger.getLogger(ClusterSync.class.getName());
  private static final long MIN_RESYNC_MS = 1_000;
  /**
   * A periodic resync reads every engine's streaks (one shared counter per engine and failure class: 6 per engine) only
   * every this many resyncs: streaks reach the replicas as events when they change, the read is the backstop for one
   * missed, and at 64 engines reading them every second was most of an idle replica's cluster operations.
   */
  static final long STREAKS_EVERY_MS = 10_000;
  /**
   * How often a resync reads the whole map when nothing says this replica missed a message: the backstop for a message
   * lost without a membership change, a freeze or an open guard (an intruder's deletion of entries, a bus connection
   * dropped and made again), which every interval cost a whole-map read per replica per second at idle.
   */
  static final long SAFETY_RESYNC_MS = 5_000;
  /** When the last resync began and when it last read the streaks ({@link #nowMs}); when the last check ran. */
  private long lastResyncMs = Long.MIN_VALUE / 2;
  private long lastStreaksMs = Long.MIN_VALUE / 2;
  private long lastCheckMs = -1;
  /** The router members the last check saw; whether a member joined since (told by the launcher). */
  private List<String> lastMembers;
  private boolean peerJoined;
  /** A check saw a reason to resync while one was under way: the next check resyncs. */
  private boolean pendingTrigger;
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);
  private static final DeliveryOptions CLUSTER = new DeliveryOptions();

  private final Vertx vertx;
  private final BreakerBook book;
  private final SharedBreakerState shared;
  private final SharedStateGuard guard;
  private final String origin;
  private final LongSupplier clockMs;
  private final DecisionFile decisions;
  private final BreakerJournal journal;
  private final ClusterSeal seal;
  private final Map<String, Long> expiryTimers = new HashMap<>();
  private final Map<String, Long> expiryAt = new HashMap<>();
  private Runnable onExpiry = () -> { };
  private long resyncIntervalMs;
  private Cadence resyncs;
  private boolean resyncing;

  ClusterSync(Vertx vertx, BreakerBook book, SharedBreakerState shared, SharedStateGuard guard, String origin, LongSupplier clockMs,
              DecisionFile decisions, BreakerJournal journal) {
    this.vertx = vertx;
    this.seal = ClusterSeal.of(vertx);
    this.decisions = decisions;
    this.journal = journal;
    this.book = book;
    this.shared = shared;
    this.guard = guard;
    this.origin = origin;
    this.clockMs = clockMs;
  }

  /** What to run when a quarantine's end comes (a tick of the book). */
  void onExpiry(Runnable tick) {
    this.onExpiry = tick;
  }

  /**
   * Registers the cluster consumers and reads the shared state; a failure fails the start (no serving on an unread
   * state). A replica that finds the cluster holding no engine state and is the first to mark it started (an empty
   * map alone does not tell: the first replica may have restored nothing) starts it: from the decisions file when
   * {@code cluster.decisions_path} is set, else from its fleet file alone, and says so in its log and journal.
   */
  Future<Void> start() {
    List<MessageConsumer<Object>> consumers = List.of(
        vertx.eventBus().<Object>consumer(Addresses.FLEET_CHANGED, msg -> {
          JsonObject body = seal.open(Addresses.FLEET_CHANGED, msg.body());
          if (body != null) applyShared(body);
        }),
        vertx.eventBus().<Object>consumer(Addresses.STREAK_CHANGED, msg -> {
          JsonObject body = seal.open(Addresses.STREAK_CHANGED, msg.body());
          if (body != null) streakChanged(body);
        }),
        vertx.eventBus().<Object>localConsumer(Addresses.PLACEMENT_PEER_JOINED, msg -> peerJoined = true));
    return Future.all(consumers.stream().map(MessageConsumer::completion).toList()).compose(v -> startingPoint()).compose(v -> resync());
  }

  private Future<Void> startingPoint() {
    return shared.states().compose(list -> {
      if (list.stream().anyMatch(json -> EngineStateEvent.fromJson(json) != null)) return Future.succeededFuture(false);
      return shared.markStarted(origin, clockMs.getAsLong());
    }).compose(first -> {
      if (!first) return Future.succeededFuture();
      return decisions.read().map(found -> {
        restore(found);
        return null;
      });
    });
  }

  /** Takes the kept decisions about engines this replica lists (a quarantine whose end has passed is over). */
  private void restore(List<EngineStateEvent> found) {
    long now = clockMs.getAsLong();
    List<EngineStateEvent> restored = found.stream().filter(e -> book.knows(e.iid()))
        .filter(e -> e.state() != narwhal.common.bus.EngineState.QUARANTINED || e.untilMs() > now).toList();
    restored.forEach(e -> applyShared(e.toJson()));
    JsonObject row = new JsonObject().put("event", "cluster_start");
    if (decisions.enabled()) {
      io.vertx.core.json.JsonArray list = new io.vertx.core.json.JsonArray();
      restored.forEach(e -> list.add(e.toJson()));
      row.put("from", "decisions_file").put("path", decisions.path()).put("restored", list);
      LOG.info("the cluster holds no engine state: this replica starts it from " + decisions.path() + " (cluster.decisions_path): "
          + (restored.isEmpty() ? "no operator decision in force" : restored.stream().map(e -> e.iid() + " " + e.state().wireName()
          + (e.untilMs() > 0 && e.state() == narwhal.common.bus.EngineState.QUARANTINED ? " until " + java.time.Instant.ofEpochMilli(e.untilMs()) : "")
          + " (" + e.cause() + ", decided by " + e.origin() + ")").collect(java.util.stream.Collectors.joining(", "))));
    } else {
      row.put("from", "fleet_file");
      LOG.info("the cluster holds no engine state: this replica starts it from its fleet file (every engine serving once its "
          + "checks pass); operator decisions made before a stop of every replica are not kept (cluster.decisions_path is not set)");
    }
    journal.acceptOnceOpen(row);
  }

  /** Arms the resync checks at {@code monitorIntervalMs} (at least {@code MIN_RESYNC_MS}); armed again, it keeps its count. */
  void arm(long monitorIntervalMs) {
    resyncIntervalMs = Math.max(MIN_RESYNC_MS, monitorIntervalMs);
    if (resyncs == null) {
      resyncs = new Cadence(vertx, () -> resyncIntervalMs, () -> check()
          .onFailure(err -> LOG.fine(() -> "could not read the shared state (the next check retries): " + err.getMessage())));
    }
    resyncs.arm();
  }

  /**
   * Every interval: resyncs when the router members changed since the last check (or one joined in between), when this
   * check comes two intervals or more after the last (the replica was frozen or its loop stalled), when the last
   * resync failed, or when {@link #SAFETY_RESYNC_MS} passed since the last; otherwise reads nothing. Whether it resynced.
   */
  Future<Boolean> check() {
    long now = nowMs();
    boolean late = lastCheckMs >= 0 && now - lastCheckMs >= 2 * Math.max(MIN_RESYNC_MS, resyncIntervalMs);
    lastCheckMs = now;
    List<String> members = ClusterView.of(vertx).routers();
    boolean moved = peerJoined || lastMembers != null && !members.equals(lastMembers);
    lastMembers = members;
    peerJoined = false;
    boolean triggered = moved || late || pendingTrigger;
    if (!triggered && now - lastResyncMs < SAFETY_RESYNC_MS) return Future.succeededFuture(false);
    if (resyncing) {
      // one under way began before what this check saw: the next check resyncs again
      pendingTrigger = triggered;
      return Future.succeededFuture(false);
    }
    pendingTrigger = false;
    return resync(triggered || now - lastStreaksMs >= STREAKS_EVERY_MS).map(true);
  }

  private static long nowMs() {
    return System.nanoTime() / 1_000_000;
  }

  void stop() {
    if (resyncs != null) resyncs.stop();
    expiryTimers.values().forEach(vertx::cancelTimer);
  }

  /** Makes a state the book decided cluster state; a quarantine's expiry is published on this replica only. */
  Future<Void> publish(EngineStateEvent event) {
    keepDecisions();
    if (event.state() == narwhal.common.bus.EngineState.QUARANTINED) scheduleExpiry(event.iid());
    boolean everyReplicaDecides = "quarantine_expired".equals(event.cause());
    return write(event, everyReplicaDecides);
  }

  Future<Void> publish(FleetHoldEvent event) {
    if (!guard.closed()) return local(event.toJson());
    return shared.putFleetHold(event).transform(ar -> {
      if (ar.failed()) return local(event.toJson());
      vertx.eventBus().publish(Addresses.FLEET_CHANGED, seal.seal(Addresses.FLEET_CHANGED, event.toJson()), CLUSTER);
      return Future.succeededFuture();
    });
  }

  /**
   * Writes a state this book holds unless the cluster holds a newer one, which the book then takes over. While the
   * guard is not closed, or when the write fails, the state is published on this replica only: the next resync
   * writes it, as it writes every state of this book newer than the cluster's.
   */
  private Future<Void> write(EngineStateEvent event, boolean localOnly) {
    if (event.version().equals(StateVersion.NONE)) return adopt(event);
    if (!guard.closed()) return local(event.toJson());
    return shared.putState(event).transform(ar -> {
      if (ar.failed()) {
        LOG.warning("could not write " + event.iid() + " to the shared state (the next resync writes it): " + ar.cause().getMessage());
        return local(event.toJson());
      }
      if (!ar.result().version().equals(event.version())) {
        applyShared(ar.result().toJson());
        return Future.succeededFuture();
      }
      vertx.eventBus().publish(Addresses.FLEET_CHANGED, seal.seal(Addresses.FLEET_CHANGED, event.toJson()), localOnly ? LOCAL : CLUSTER);
      return Future.succeededFuture();
    });
  }

  /** A state without a version (an engine this replica just learned of): the cluster's state of the engine wins, if it has one. */
  private Future<Void> adopt(EngineStateEvent provisional) {
    local(provisional.toJson());
    return shared.state(provisional.iid()).otherwise((JsonObject) null).map(held -> {
      if (held != null) applyShared(held);
      return null;
    });
  }

  private Future<Void> local(JsonObject event) {
    vertx.eventBus().publish(Addresses.FLEET_CHANGED, seal.seal(Addresses.FLEET_CHANGED, event), LOCAL);
    return Future.succeededFuture();
  }

  /** A streak the book changed: a reset goes back to zero in the shared counter, and every change is published. */
  void streakChanged(BreakerAction.StreakChanged change) {
    if (!guard.closed()) return;
    if (change.streak() == 0) shared.reset(change.iid(), change.failureClass());
    vertx.eventBus().publish(Addresses.STREAK_CHANGED, seal.seal(Addresses.STREAK_CHANGED, new JsonObject().put("origin", origin)
        .put("iid", change.iid()).put("class", change.failureClass().wireName()).put("streak", change.streak())));
  }

  /** Counts a failure cluster-wide; this replica's own count when the shared state cannot be reached. */
  Future<Integer> countFailure(String iid, FailureClass c) {
    return shared.increment(iid, c).otherwise(err -> book.streak(iid, c) + 1);
  }

  /** Takes over a fleet-change event or shared-map entry, if it is newer than what this replica holds; whether it changed this book. */
  boolean applyShared(JsonObject json) {
    FleetHoldEvent hold = FleetHoldEvent.fromJson(json);
    if (hold != null) {
      boolean changed = book.applyFleetHold(hold);
      if (changed) LOG.info(() -> "fleet hold " + (hold.held() ? "put" : "lifted") + " by " + hold.origin());
      return changed;
    }
    EngineStateEvent event = EngineStateEvent.fromJson(json);
    if (event == null) return false;
    Optional<BreakerAction.StateChange> taken = book.applyRemote(event);
    taken.ifPresent(change -> {
      LOG.info(() -> "engine " + change.iid() + ": " + change.from().wireName() + " → " + change.to().wireName() + " ("
          + change.cause() + ", decided by " + event.origin() + ")");
      journal.accept(new JsonObject().put("event", "engine_state").put("iid", change.iid()).put("from", change.from().wireName())
          .put("to", change.to().wireName()).put("cause", change.cause()).put("decided_by", event.origin()));
    });
    scheduleExpiry(event.iid());
    keepDecisions();
    return taken.isPresent();
  }

  private void keepDecisions() {
    if (!decisions.enabled()) return;
    List<EngineStateEvent> held = new ArrayList<>();
    book.engines().forEach(e -> book.stateEvent(e.iid()).ifPresent(held::add));
    decisions.update(held);
  }

  private void streakChanged(JsonObject json) {
    if (origin.equals(json.getString("origin")) || !(json.getValue("streak") instanceof Number streak)) return;
    try {
      book.applyStreak(json.getString("iid"), FailureClass.parse(json.getString("class")), streak.intValue(), true);
    } catch (RuntimeException malformed) {
      LOG.fine(() -> "ignored streak event " + json.encode());
    }
  }

  /**
   * Reconciles this book with the cluster (at start, every resync interval and when the guard closes): takes the
   * newest version of every state and streak from the shared map, then writes, and publishes cluster-wide, every state
   * of this book newer than the cluster's, so a decision made while this replica was cut off (an open guard, a freeze,
   * a partition whose side lost the merge) reaches the cluster, and one this replica missed reaches it.
   */
  Future<Void> resync() {
    return resync(true);
  }

  /** {@code streaks}: also read every engine's streaks (a periodic resync does so every {@link #STREAKS_EVERY_MS}). */
  private Future<Void> resync(boolean streaks) {
    if (resyncing) return Future.succeededFuture();
    resyncing = true;
    long began = nowMs();
    lastResyncMs = began;
    if (streaks) lastStreaksMs = began;
    return reconcile(streaks).onFailure(err -> {
      // a failed resync is tried again at the next check, as when every check read the map
      lastResyncMs = Long.MIN_VALUE / 2;
      if (streaks) lastStreaksMs = Long.MIN_VALUE / 2;
    }).eventually(() -> {
      resyncing = false;
      return Future.succeededFuture();
    });
  }

  /** One resync; never two at once (a slow shared state, a merge under way, must not pile reads up). */
  private Future<Void> reconcile(boolean withStreaks) {
    Future<Integer> states = shared.states().compose(list -> {
      Map<String, StateVersion> held = new HashMap<>();
      for (JsonObject json : list) {
        // a state this replica missed the message of: placement on this node hears it from here, not from a read of its own
        if (applyShared(json)) local(json);
        FleetHoldEvent hold = FleetHoldEvent.fromJson(json);
        EngineStateEvent event = hold == null ? EngineStateEvent.fromJson(json) : null;
        long now = clockMs.getAsLong();
        // a version further ahead than the clock skew allows is forged: as if absent, so this book's truth overwrites it
        if (hold != null && !ClockBound.ahead(hold.changedMs(), now)) held.put(SharedState.FLEET_HOLD_KEY, hold.version());
        if (event != null && !ClockBound.ahead(event.changedMs(), now)) held.put(event.iid(), event.version());
      }
      return writeNewer(held);
    });
    if (!withStreaks) return states.mapEmpty();
    List<String> iids = book.engines().stream().map(EngineConfig::iid).toList();
    Future<Map<String, Integer>> streaks = shared.streaks(iids, vertx.isClustered()).onSuccess(read -> {
      for (String iid : iids) {
        for (FailureClass c : FailureClass.values()) {
          Integer n = read.get(SharedBreakerState.streakName(iid, c));
          if (n != null) book.applyStreak(iid, c, n);
        }
      }
    });
    return Future.join(states, streaks).mapEmpty();
  }

  /** Writes the states (and fleet hold) this book holds in a newer version than the cluster's; how many. */
  private Future<Integer> writeNewer(Map<String, StateVersion> held) {
    List<Future<Void>> writes = new ArrayList<>();
    for (EngineConfig engine : book.engines()) {
      book.stateEvent(engine.iid())
          .filter(mine -> mine.version().newerThan(held.getOrDefault(mine.iid(), StateVersion.NONE)))
          .ifPresent(mine -> writes.add(write(mine, false)));
    }
    FleetHoldEvent hold = book.fleetHoldEvent();
    if (hold.version().newerThan(held.getOrDefault(SharedState.FLEET_HOLD_KEY, StateVersion.NONE))) writes.add(publish(hold));
    if (!writes.isEmpty()) {
      LOG.info(() -> "resynced with the shared state; " + writes.size() + " decision(s) of this replica newer than the cluster's written");
    }
    return Future.join(writes).map(writes.size());
  }

  /** Ends the engine's quarantine at the instant it carries (once per quarantine end). */
  private void scheduleExpiry(String iid) {
    long until = book.quarantineUntil(iid);
    if (until == 0 || expiryAt.getOrDefault(iid, 0L) == until) return;
    Long previous = expiryTimers.remove(iid);
    if (previous != null) vertx.cancelTimer(previous);
    expiryAt.put(iid, until);
    expiryTimers.put(iid, vertx.setTimer(Math.max(1, until - clockMs.getAsLong() + 1), t -> {
      expiryTimers.remove(iid);
      expiryAt.remove(iid);
      onExpiry.run();
    }));
  }
}
