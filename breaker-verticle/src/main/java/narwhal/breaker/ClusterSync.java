package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.SharedState;
import narwhal.common.config.EngineConfig;
import narwhal.common.fault.FailureClass;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * Keeps this replica's {@link BreakerBook} and the cluster's shared state in step (docs/architecture.md#what-lives-in-the-cluster): writes and publishes
 * the states, fleet hold and streaks the book decides; takes over those other replicas decide, from
 * {@link Addresses#FLEET_CHANGED} and {@link Addresses#STREAK_CHANGED} as they happen and from the shared map at start
 * and every resync; ends each quarantine at the instant it carries. While the {@link SharedStateGuard} is not closed,
 * decisions are published on this replica only and queued; when it closes, a full resync takes the newest version of
 * every state and writes and publishes the queued ones that are still the newest.
 */
final class ClusterSync {
  private static final Logger LOG = Logger.getLogger(ClusterSync.class.getName());
  private static final long MIN_RESYNC_MS = 1_000;
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);
  private static final DeliveryOptions CLUSTER = new DeliveryOptions();

  private final Vertx vertx;
  private final BreakerBook book;
  private final SharedBreakerState shared;
  private final SharedStateGuard guard;
  private final String origin;
  private final LongSupplier clockMs;
  /** Keys (engine iids, the fleet-hold key) decided while the cluster could not be written, in decision order. */
  private final Set<String> queued = new LinkedHashSet<>();
  private final Map<String, Long> expiryTimers = new HashMap<>();
  private final Map<String, Long> expiryAt = new HashMap<>();
  private Runnable onExpiry = () -> { };
  private long resyncTimer = -1;

  ClusterSync(Vertx vertx, BreakerBook book, SharedBreakerState shared, SharedStateGuard guard, String origin, LongSupplier clockMs) {
    this.vertx = vertx;
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

  /** Registers the cluster consumers and reads the shared state; a failure fails the start (no serving on an unread state). */
  Future<Void> start() {
    List<MessageConsumer<JsonObject>> consumers = List.of(
        vertx.eventBus().consumer(Addresses.FLEET_CHANGED, msg -> applyShared(msg.body())),
        vertx.eventBus().consumer(Addresses.STREAK_CHANGED, msg -> streakChanged(msg.body())));
    return Future.all(consumers.stream().map(MessageConsumer::completion).toList()).compose(v -> resync());
  }

  void arm(long monitorIntervalMs) {
    vertx.cancelTimer(resyncTimer);
    resyncTimer = vertx.setPeriodic(Math.max(MIN_RESYNC_MS, monitorIntervalMs), t -> (queued.isEmpty() ? resync() : fullResync())
        .onFailure(err -> LOG.fine(() -> "could not read the shared state (the next resync retries): " + err.getMessage())));
  }

  void stop() {
    vertx.cancelTimer(resyncTimer);
    expiryTimers.values().forEach(vertx::cancelTimer);
  }

  /** Makes a state the book decided cluster state; a quarantine's expiry is published on this replica only. */
  Future<Void> publish(EngineStateEvent event) {
    if (event.state() == narwhal.common.bus.EngineState.QUARANTINED) scheduleExpiry(event.iid());
    boolean everyReplicaDecides = "quarantine_expired".equals(event.cause());
    return write(event.iid(), () -> shared.putState(event), event.toJson(), everyReplicaDecides);
  }

  Future<Void> publish(FleetHoldEvent event) {
    return write(SharedState.FLEET_HOLD_KEY, () -> shared.putFleetHold(event), event.toJson(), false);
  }

  private Future<Void> write(String key, java.util.function.Supplier<Future<Void>> put, JsonObject event, boolean localOnly) {
    if (!guard.closed()) {
      queued.add(key);
      vertx.eventBus().publish(Addresses.FLEET_CHANGED, event, LOCAL);
      return Future.succeededFuture();
    }
    return put.get().recover(err -> {
      LOG.warning("could not write " + key + " to the shared state (queued for the cluster): " + err.getMessage());
      queued.add(key);
      return Future.succeededFuture();
    }).onComplete(v -> vertx.eventBus().publish(Addresses.FLEET_CHANGED, event, localOnly || queued.contains(key) ? LOCAL : CLUSTER));
  }

  /** A streak the book changed: a reset goes back to zero in the shared counter, and every change is published. */
  void streakChanged(BreakerAction.StreakChanged change) {
    if (!guard.closed()) return;
    if (change.streak() == 0) shared.reset(change.iid(), change.failureClass());
    vertx.eventBus().publish(Addresses.STREAK_CHANGED, new JsonObject().put("origin", origin).put("iid", change.iid())
        .put("class", change.failureClass().wireName()).put("streak", change.streak()));
  }

  /** Counts a failure cluster-wide; this replica's own count when the shared state cannot be reached. */
  Future<Integer> countFailure(String iid, FailureClass c) {
    return shared.increment(iid, c).otherwise(err -> book.streak(iid, c) + 1);
  }

  /** Takes over a fleet-change event or shared-map entry, if it is newer than what this replica holds. */
  void applyShared(JsonObject json) {
    FleetHoldEvent hold = FleetHoldEvent.fromJson(json);
    if (hold != null) {
      if (book.applyFleetHold(hold)) LOG.info(() -> "fleet hold " + (hold.held() ? "put" : "lifted") + " by " + hold.origin());
      return;
    }
    EngineStateEvent event = EngineStateEvent.fromJson(json);
    if (event == null) return;
    book.applyRemote(event).ifPresent(change -> LOG.fine(() -> "engine " + change.iid() + ": " + change.from().wireName()
        + " → " + change.to().wireName() + " (" + change.cause() + ", decided by " + event.origin() + ")"));
    scheduleExpiry(event.iid());
  }

  private void streakChanged(JsonObject json) {
    if (origin.equals(json.getString("origin")) || !(json.getValue("streak") instanceof Number streak)) return;
    try {
      book.applyStreak(json.getString("iid"), FailureClass.parse(json.getString("class")), streak.intValue());
    } catch (RuntimeException malformed) {
      LOG.fine(() -> "ignored streak event " + json.encode());
    }
  }

  /** Reads the whole shared state (engine states, fleet hold, streaks) into the book. */
  Future<Void> resync() {
    Future<Void> states = shared.states().onSuccess(list -> list.forEach(this::applyShared)).mapEmpty();
    List<Future<Integer>> streaks = new ArrayList<>();
    for (EngineConfig engine : book.engines()) {
      for (FailureClass c : FailureClass.values()) {
        streaks.add(shared.streak(engine.iid(), c).onSuccess(n -> book.applyStreak(engine.iid(), c, n)));
      }
    }
    return Future.join(states, Future.join(streaks)).mapEmpty();
  }

  /**
   * The guard closed again (or a write failed while it stayed closed): takes the newest version of every state from the
   * cluster, then writes and publishes what this replica decided meanwhile, as the book now holds it (its own
   * decision, or a newer one from another replica).
   */
  Future<Void> fullResync() {
    return shared.states().onSuccess(list -> list.forEach(this::applyShared)).compose(read -> {
      List<String> keys = new ArrayList<>(queued);
      queued.clear();
      List<Future<Void>> writes = new ArrayList<>();
      for (String key : keys) {
        if (SharedState.FLEET_HOLD_KEY.equals(key)) {
          writes.add(write(key, () -> shared.putFleetHold(book.fleetHoldEvent()), book.fleetHoldEvent().toJson(), false));
        } else {
          book.stateEvent(key).ifPresent(event -> writes.add(write(key, () -> shared.putState(event), event.toJson(), false)));
        }
      }
      LOG.info(() -> "resynced with the shared state; " + keys.size() + " queued decision(s) written");
      return Future.join(writes).<Void>mapEmpty();
    });
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
