package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.Rendezvous;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.FailureClass;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The liveness sweep (docs/operations.md#breaker-states): each serving engine's {@code /health} checked once per sweep
 * interval cluster-wide by its owner, the first in the engine's rendezvous order over the live router replicas (as
 * for its load readings), with no lease and no shared-map read per engine. A replica publishes the engines it checks
 * in one sealed message a sweep ({@link Addresses#LIVENESS_SWEPT}); the k-th in an engine's order checks it when it
 * heard of no check for k × (interval + {@code engine.health_timeout_s}) more (its owner frozen, gone or cut off).
 * While the shared state cannot be reached a replica checks every engine itself. Misses count in the engine's shared
 * streak, so a sweep that changes hands keeps the count.
 */
final class LivenessSweep {
  private final Vertx vertx;
  private final Supplier<NarwhalConfig> config;
  private final BreakerBook book;
  private final Prober prober;
  private final ClusterSync sync;
  private final OutcomeIntake intake;
  private final BreakerMetrics metrics;
  private final SharedStateGuard guard;
  private final String origin;
  private final LongSupplier clockMs;
  /** When each serving engine was last checked, by this replica or one it heard of (this replica's clock). */
  private final Map<String, Long> lastChecked = new HashMap<>();
  private final Set<String> inFlight = new HashSet<>();
  private MessageConsumer<Object> heard;

  LivenessSweep(Vertx vertx, Supplier<NarwhalConfig> config, BreakerBook book, Prober prober, ClusterSync sync,
                OutcomeIntake intake, BreakerMetrics metrics, SharedStateGuard guard, String origin, LongSupplier clockMs) {
    this.vertx = vertx;
    this.config = config;
    this.book = book;
    this.prober = prober;
    this.sync = sync;
    this.intake = intake;
    this.metrics = metrics;
    this.guard = guard;
    this.origin = origin;
    this.clockMs = clockMs;
  }

  /** Listens to the other replicas' sweeps. */
  Future<Void> start() {
    heard = vertx.eventBus().consumer(Addresses.LIVENESS_SWEPT, msg -> heard(ClusterSeal.of(vertx).open(Addresses.LIVENESS_SWEPT, msg.body())));
    return heard.completion();
  }

  void stop() {
    if (heard != null) heard.unregister();
  }

  /** One sweep: checks the serving engines this replica owns, or takes over, that are due. */
  void sweep() {
    NarwhalConfig cfg = config.get();
    long interval = cfg.recovery().livenessIntervalMs();
    long takeover = interval + cfg.engine().healthTimeoutMs();
    long now = clockMs.getAsLong();
    ClusterView view = ClusterView.of(vertx);
    String self = view.self();
    List<String> members = guard.closed() ? view.routers() : List.of(self);
    Map<String, EngineConfig> fleet = new HashMap<>();
    book.engines().forEach(e -> fleet.put(e.iid(), e));
    List<String> serving = book.servingEngines();
    lastChecked.keySet().retainAll(Set.copyOf(serving));
    JsonArray checking = new JsonArray();
    for (String iid : serving) {
      EngineConfig engine = fleet.get(iid);
      if (engine == null) continue;
      // an engine first seen is due at once for its owner; the others wait their turn from now
      long last = lastChecked.computeIfAbsent(iid, k -> now - interval * 9 / 10);
      long due = interval * 9 / 10 + Rendezvous.rank(iid, members, self) * takeover;
      if (now - last < due || !inFlight.add(iid)) continue;
      lastChecked.put(iid, now);
      checking.add(iid);
      check(engine).onComplete(done -> inFlight.remove(iid));
    }
    if (!checking.isEmpty()) {
      vertx.eventBus().publish(Addresses.LIVENESS_SWEPT, ClusterSeal.of(vertx).seal(Addresses.LIVENESS_SWEPT,
          new JsonObject().put("origin", origin).put("iids", checking)));
    }
  }

  private Future<Void> check(EngineConfig engine) {
    String iid = engine.iid();
    return prober.healthy(engine).compose(ok -> {
      metrics.livenessChecked(iid, ok);
      return ok ? intake.step(() -> book.liveness(iid, true))
          : sync.countFailure(iid, FailureClass.LIVENESS).compose(misses -> intake.step(() -> book.liveness(iid, false, misses)));
    });
  }

  /** Another replica's sweep: its engines count as checked now (only engines of this fleet, so the map stays bounded). */
  private void heard(JsonObject body) {
    if (body == null || origin.equals(body.getString("origin")) || !(body.getValue("iids") instanceof JsonArray iids)) return;
    long now = clockMs.getAsLong();
    for (Object iid : iids) {
      if (iid instanceof String id && book.state(id).isPresent()) lastChecked.put(id, now);
    }
  }
}
