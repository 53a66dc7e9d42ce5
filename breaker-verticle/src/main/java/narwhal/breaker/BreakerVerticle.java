package narwhal.breaker;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.Lock;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.Failures;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.FailureClass;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * Engine health (docs/operations.md#breaker-states): consumes leg outcomes from the local bus, keeps streaks in a {@link BreakerBook},
 * runs health and inference probes, liveness sweeps and readmission rounds, serves the admin commands that
 * change engine state, and publishes every state change on {@link Addresses#FLEET_CHANGED} and into the
 * {@code narwhal.engine-state} shared map, which placement on every replica follows.
 *
 * <p>Cluster state (docs/architecture.md#what-lives-in-the-cluster, {@link SharedBreakerState}): streaks are counted in shared counters and their changes
 * published on {@link #STREAK_CHANGED}; every replica's book takes over the states, streaks and fleet hold other
 * replicas decide, from {@link Addresses#FLEET_CHANGED} as they happen, from the shared map at start (a replica that
 * joins late) and at each resync. A probe runs only under the engine's cluster-wide probe lock; a replica that cannot
 * take it skips the probe. Every replica ends a quarantine at the instant the quarantine carries.
 */
public final class BreakerVerticle extends VerticleBase {
  /** Publish, cluster-wide: one engine's streak of one class changed ({@code {"origin","iid","class","streak"}}). */
  public static final String STREAK_CHANGED = "narwhal.breaker.streak";

  private static final Logger LOG = Logger.getLogger(BreakerVerticle.class.getName());
  private static final long MIN_RESYNC_MS = 1_000;

  private final Supplier<NarwhalConfig> config;
  private final MeterRegistry registry;
  private final LongSupplier clockMs;
  private final UnaryOperator<String> env;
  private final String origin = "breaker-" + UUID.randomUUID().toString().substring(0, 8);
  private final List<Long> timers = new ArrayList<>();
  /** Per quarantined engine: the timer that ends its quarantine, and the end it was set for. */
  private final Map<String, Long> expiryTimers = new HashMap<>();
  private final Map<String, Long> expiryAt = new HashMap<>();
  private BreakerBook book;
  private BreakerMetrics metrics;
  private Prober prober;
  private SharedBreakerState shared;

  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs) {
    this(config, registry, clockMs, System::getenv);
  }

  /**
   * @param clockMs the breaker's clock, epoch milliseconds (quarantine ends travel between replicas in it)
   * @param env     reads environment variables (the admin token); tests pass their own
   */
  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs,
                         UnaryOperator<String> env) {
    this.config = config;
    this.registry = registry;
    this.clockMs = clockMs;
    this.env = env;
  }

  @Override
  public Future<?> start() {
    NarwhalConfig cfg = config.get();
    book = new BreakerBook(cfg.engines(), cfg.recovery(), cfg.engineContract() != null, clockMs, origin);
    metrics = new BreakerMetrics(registry, book);
    cfg.engines().forEach(e -> metrics.track(e.iid()));
    prober = new Prober(vertx, config);
    return SharedBreakerState.open(vertx).compose(state -> {
      shared = state;
      List<MessageConsumer<JsonObject>> consumers = List.of(
          vertx.eventBus().localConsumer(Addresses.BREAKER_OUTCOME, msg -> outcome(LegOutcome.fromJson(msg.body()))),
          vertx.eventBus().localConsumer(Addresses.BREAKER_STATE, msg -> msg.reply(state())),
          vertx.eventBus().consumer(Addresses.ADMIN, this::admin),
          vertx.eventBus().consumer(Addresses.FLEET_CHANGED, msg -> applyShared(msg.body())),
          vertx.eventBus().consumer(STREAK_CHANGED, msg -> streakChanged(msg.body())),
          vertx.eventBus().localConsumer(Addresses.CONFIG_CHANGED, msg -> reconfigured()));
      return Future.all(consumers.stream().map(MessageConsumer::completion).toList());
    }).compose(v -> resync()).onSuccess(v -> armTimers(cfg));
  }

  private void armTimers(NarwhalConfig cfg) {
    timers.forEach(vertx::cancelTimer);
    timers.clear();
    timers.add(vertx.setPeriodic(cfg.recovery().monitorIntervalMs(), t -> mutate(book::tick)));
    timers.add(vertx.setPeriodic(cfg.recovery().readmitIntervalMs(), t -> mutate(book::readmissionRound)));
    timers.add(vertx.setPeriodic(cfg.recovery().livenessIntervalMs(), t -> livenessSweep()));
    timers.add(vertx.setPeriodic(Math.max(MIN_RESYNC_MS, cfg.recovery().monitorIntervalMs()), t -> resync()
        .onFailure(err -> LOG.warning("could not read the shared state (the next resync retries): " + err.getMessage()))));
  }

  /** A reloaded fleet file: new recovery settings and cadences, added engines checked before placement, removed ones forgotten. */
  private void reconfigured() {
    NarwhalConfig cfg = config.get();
    cfg.engines().forEach(e -> metrics.track(e.iid()));
    mutate(() -> book.reconfigure(cfg.engines(), cfg.recovery(), cfg.engineContract() != null));
    armTimers(cfg);
  }

  @Override
  public Future<?> stop() {
    timers.forEach(vertx::cancelTimer);
    expiryTimers.values().forEach(vertx::cancelTimer);
    return prober == null ? Future.succeededFuture() : prober.close();
  }

  // Leg outcomes

  private void outcome(LegOutcome o) {
    if (!book.knows(o.iid())) return;
    if (o.success() || o.failureClass() == null) {
      mutate(() -> book.record(o));
      return;
    }
    shared.increment(o.iid(), o.failureClass())
        .otherwise(err -> book.streak(o.iid(), o.failureClass()) + 1)
        .onSuccess(streak -> mutate(() -> book.record(o, streak)));
  }

  /**
   * Runs one step of the book, then makes it cluster state: streaks it reset go back to zero in the shared counters,
   * every streak it changed is published, and its actions are carried out. Completes when the states are written.
   */
  private Future<Void> mutate(Supplier<List<BreakerAction>> step) {
    Map<String, Map<FailureClass, Integer>> before = book.streaks();
    List<BreakerAction> actions = step.get();
    book.streaks().forEach((iid, streaks) -> streaks.forEach((c, value) -> {
      Integer was = before.getOrDefault(iid, Map.of()).get(c);
      if (was == null || was.intValue() == value) return;
      if (value == 0) shared.reset(iid, c);
      vertx.eventBus().publish(STREAK_CHANGED, new JsonObject().put("origin", origin).put("iid", iid)
          .put("class", c.wireName()).put("streak", value));
    }));
    return apply(actions);
  }

  private Future<Void> apply(List<BreakerAction> actions) {
    List<Future<Void>> writes = new ArrayList<>();
    for (BreakerAction action : actions) {
      if (action instanceof BreakerAction.StateChange change) {
        writes.add(publish(change));
      } else if (action instanceof BreakerAction.Probe probe) {
        runProbe(probe);
      } else if (action instanceof BreakerAction.FleetHold hold) {
        JsonObject event = new JsonObject().put("fleet_hold", hold.held()).put("changed_ms", book.fleetHoldChangedMs())
            .put("origin", book.fleetHoldBy());
        writes.add(shared.putFleetHold(event).otherwise(err -> warn("fleet hold", err))
            .onComplete(v -> vertx.eventBus().publish(Addresses.FLEET_CHANGED, event)));
      }
    }
    return Future.join(writes).mapEmpty();
  }

  /**
   * Writes a state change into the shared map, then publishes it. A quarantine's expiry is published on this replica
   * only: every replica ends the quarantine itself at the instant it carries.
   */
  private Future<Void> publish(BreakerAction.StateChange change) {
    if (change.to() == EngineState.EJECTED && change.from() != EngineState.EJECTED) metrics.ejected(change.iid(), change.cause());
    if (change.to() == EngineState.SERVING && (change.from() == EngineState.EJECTED || change.from() == EngineState.HELD)) {
      metrics.readmitted(change.iid(), change.cause());
    }
    LOG.info(() -> "engine " + change.iid() + ": " + change.from().wireName() + " → " + change.to().wireName() + " (" + change.cause() + ")");
    journal(new JsonObject().put("event", "engine_state").put("iid", change.iid()).put("from", change.from().wireName())
        .put("to", change.to().wireName()).put("cause", change.cause()));
    EngineStateEvent stored = book.stateEvent(change.iid()).orElseThrow();
    EngineStateEvent event = new EngineStateEvent(stored.iid(), stored.state(), change.cause(), stored.untilMs(), stored.producer(),
        stored.changedMs(), stored.origin());
    if (change.to() == EngineState.QUARANTINED) scheduleExpiry(change.iid());
    DeliveryOptions delivery = new DeliveryOptions().setLocalOnly("quarantine_expired".equals(change.cause()));
    return shared.putState(event).otherwise(err -> warn("state of " + change.iid(), err))
        .onComplete(v -> vertx.eventBus().publish(Addresses.FLEET_CHANGED, event.toJson(), delivery));
  }

  private Void warn(String what, Throwable err) {
    LOG.warning("could not write " + what + " to the shared state: " + err.getMessage());
    return null;
  }

  // State other replicas decided

  /** Takes over a fleet-change event or shared-map entry, if it is newer than what this replica holds. */
  private void applyShared(JsonObject json) {
    if (json == null) return;
    if (json.getValue("fleet_hold") instanceof Boolean held) {
      if (json.getValue("changed_ms") instanceof Number changed && json.getValue("origin") instanceof String by
          && book.applyFleetHold(held, changed.longValue(), by)) {
        LOG.info(() -> "fleet hold " + (held ? "put" : "lifted") + " by " + by);
      }
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

  /**
   * Reads the whole shared state (engine states, fleet hold, streaks) into the book: at start, where a failure fails the
   * start (a replica must not serve on a state it could not read), and periodically.
   */
  private Future<Void> resync() {
    Future<Void> states = shared.states().onSuccess(list -> list.forEach(this::applyShared)).mapEmpty();
    List<Future<Integer>> streaks = new ArrayList<>();
    for (EngineConfig engine : book.engines()) {
      for (FailureClass c : FailureClass.values()) {
        streaks.add(shared.streak(engine.iid(), c).onSuccess(n -> book.applyStreak(engine.iid(), c, n)));
      }
    }
    return Future.join(states, Future.join(streaks)).mapEmpty();
  }

  /** Ends the engine's quarantine at the instant it carries (once per quarantine end). */
  private void scheduleExpiry(String iid) {
    long until = book.quarantineUntil(iid);
    if (until == 0) return;
    if (expiryAt.getOrDefault(iid, 0L) == until) return;
    Long previous = expiryTimers.remove(iid);
    if (previous != null) vertx.cancelTimer(previous);
    expiryAt.put(iid, until);
    expiryTimers.put(iid, vertx.setTimer(Math.max(1, until - clockMs.getAsLong() + 1), t -> {
      expiryTimers.remove(iid);
      expiryAt.remove(iid);
      mutate(book::tick);
    }));
  }

  // Probes and liveness

  /** Runs a probe the book asked for under the engine's cluster-wide probe lock, or skips it when another replica holds it. */
  private void runProbe(BreakerAction.Probe probe) {
    String iid = probe.iid();
    EngineConfig target = engine(iid);
    if (target == null) {
      book.probeSkipped(iid);
      return;
    }
    shared.probeLock(iid).onComplete(locked -> {
      if (locked.failed()) {
        book.probeSkipped(iid);
        LOG.fine(() -> "probe of " + iid + " skipped: another replica holds its probe lock");
        return;
      }
      Lock lock = locked.result();
      shared.state(iid).otherwise((JsonObject) null)
          .compose(current -> {
            applyShared(current);
            if (!book.needsProbe(iid, probe.kind())) {
              book.probeSkipped(iid);
              return Future.<Void>succeededFuture();
            }
            return probe(target, probe).compose(result -> {
              metrics.probed(iid, probe.kind(), result.outcome());
              journal(new JsonObject().put("event", "probe").put("iid", iid).put("kind", probe.kind().wireName())
                  .put("outcome", result.outcome().wireName()).put("detail", result.detail()));
              return mutate(() -> book.probeResult(iid, probe.kind(), result.outcome(), result.detail()));
            });
          })
          .onComplete(done -> lock.release());
    });
  }

  private Future<ProbeResult> probe(EngineConfig target, BreakerAction.Probe probe) {
    Future<ProbeResult> outcome = switch (probe.kind()) {
      case HEALTH -> prober.health(target);
      case INFERENCE -> prober.inference(target, probe.producerIid() == null ? null : engine(probe.producerIid()), this::serving);
      case LIFECYCLE -> prober.lifecycle(target, this::serving);
    };
    return outcome.otherwise(err -> ProbeResult.inconclusive("probe error: " + err.getMessage()));
  }

  /**
   * Checks each serving engine's {@code /health}, once per sweep interval cluster-wide: under the engine's liveness lock
   * a replica checks only when no replica did within the last 90% of the interval, so misses count once, not once per
   * replica. The last-check stamps are wall-clock coordination data, not breaker time.
   */
  private void livenessSweep() {
    long interval = config.get().recovery().livenessIntervalMs();
    for (String iid : book.servingEngines()) {
      EngineConfig engine = engine(iid);
      if (engine == null) continue;
      shared.livenessLock(iid).onSuccess(lock -> shared.lastLivenessCheck(iid)
          .compose(last -> System.currentTimeMillis() - last < interval * 9 / 10 ? Future.<Void>succeededFuture()
              : prober.healthy(engine).compose(ok -> shared.livenessChecked(iid, System.currentTimeMillis())
                  .compose(v -> ok ? mutate(() -> book.liveness(iid, true))
                      : shared.increment(iid, FailureClass.LIVENESS).compose(misses -> mutate(() -> book.liveness(iid, false, misses))))))
          .onComplete(done -> lock.release()));
    }
  }

  /** Engine events go to the request journal's writer (the router owns the file) as rows with an {@code event} field. */
  private void journal(JsonObject event) {
    vertx.eventBus().send(Addresses.JOURNAL_EVENT, event.put("at", java.time.Instant.now().toString()),
        new DeliveryOptions().setLocalOnly(true));
  }

  private boolean serving(String iid) {
    return book.state(iid).filter(s -> s == EngineState.SERVING).isPresent();
  }

  private EngineConfig engine(String iid) {
    return book.engines().stream().filter(e -> e.iid().equals(iid)).findFirst().orElse(null);
  }

  private JsonObject state() {
    return new JsonObject().put("engines", book.snapshot()).put("fleet_hold", book.fleetHold()).put("replica", origin);
  }

  // Admin commands (docs/operations.md#admin-commands)

  private void admin(Message<JsonObject> msg) {
    JsonObject body = msg.body() == null ? new JsonObject() : msg.body();
    String command = body.getString("command", "");
    JsonObject args = body.getJsonObject("args", new JsonObject());
    String expected = adminToken();
    String given = msg.headers().get("token");
    if (!"state".equals(command) && (expected == null || !expected.equals(given))) {
      metrics.adminRefused();
      msg.fail(Failures.UNAUTHORIZED, expected == null ? "admin commands other than state need a configured admin token"
          : "admin token missing or wrong");
      return;
    }
    try {
      String iid = args.getString("iid");
      if (!List.of("state", "wave-restart", "reload-config").contains(command) && (iid == null || !book.knows(iid))) {
        msg.fail(Failures.BAD_MESSAGE, command + ": unknown engine " + iid);
        return;
      }
      switch (command) {
        case "state" -> msg.reply(state());
        case "eject" -> replyAfter(msg, () -> book.eject(iid));
        case "readmit" -> replyAfter(msg, () -> book.readmit(iid));
        case "quarantine" -> {
          Object seconds = args.getValue("seconds");
          if (!(seconds instanceof Number n) || n.doubleValue() <= 0) {
            msg.fail(Failures.BAD_MESSAGE, "quarantine: seconds: " + seconds + " is not valid: expected a number > 0");
            return;
          }
          replyAfter(msg, () -> book.quarantine(iid, n.doubleValue()));
        }
        case "drain" -> replyAfter(msg, () -> book.drain(iid, true));
        case "undrain" -> replyAfter(msg, () -> book.drain(iid, false));
        case "wave-restart" -> waveRestart(msg);
        case "reload-config" -> {
          vertx.eventBus().publish(Addresses.CONFIG_RELOAD, new JsonObject());
          msg.reply(new JsonObject().put("reload", "requested on every replica"));
        }
        default -> msg.fail(Failures.BAD_MESSAGE, "unknown admin command \"" + command + "\"");
      }
    } catch (RuntimeException e) {
      msg.fail(Failures.BAD_MESSAGE, e.getMessage());
    }
  }

  /** Applies an admin step and replies with the state once the change is in the shared map. */
  private void replyAfter(Message<JsonObject> msg, Supplier<List<BreakerAction>> step) {
    mutate(step).onComplete(v -> msg.reply(state()));
  }

  private void waveRestart(Message<JsonObject> msg) {
    List<Future<ProbeResult>> checks = book.engines().stream().map(e -> prober.lifecycle(e, iid -> true)).toList();
    Future.join(checks).onComplete(ar -> {
      List<String> failed = new ArrayList<>();
      for (int i = 0; i < checks.size(); i++) {
        ProbeResult r = checks.get(i).result();
        if (r == null || !r.passed()) failed.add(book.engines().get(i).iid() + (r == null ? "" : " (" + r.detail() + ")"));
      }
      if (!failed.isEmpty()) {
        msg.fail(Failures.BAD_MESSAGE, "wave-restart: validation failed for " + String.join(", ", failed) + "; the fleet stays held");
        return;
      }
      replyAfter(msg, book::waveRestarted);
    });
  }

  private String adminToken() {
    String value = env.apply(config.get().admin().tokenEnv());
    return value == null || value.isEmpty() ? null : value;
  }
}
