package narwhal.breaker;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.Failures;
import narwhal.common.bus.LegOutcome;
import narwhal.common.bus.SharedState;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * Engine health (CONTRACT §6): consumes leg outcomes from the local bus, keeps streaks in a {@link BreakerBook},
 * runs health and inference probes, liveness sweeps and readmission rounds, serves the admin commands that
 * change engine state, and publishes every state change on {@link Addresses#FLEET_CHANGED} and into the
 * {@code narwhal.engine-state} shared map, which placement on every replica follows.
 */
public final class BreakerVerticle extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(BreakerVerticle.class.getName());

  private final Supplier<NarwhalConfig> config;
  private final MeterRegistry registry;
  private final LongSupplier clockMs;
  private final java.util.function.UnaryOperator<String> env;
  private final List<Long> timers = new ArrayList<>();
  private BreakerBook book;
  private BreakerMetrics metrics;
  private Prober prober;
  private AsyncMap<String, String> shared;

  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs) {
    this(config, registry, clockMs, System::getenv);
  }

  /** @param env reads environment variables (the admin token); tests pass their own */
  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs,
                         java.util.function.UnaryOperator<String> env) {
    this.config = config;
    this.registry = registry;
    this.clockMs = clockMs;
    this.env = env;
  }

  @Override
  public Future<?> start() {
    NarwhalConfig cfg = config.get();
    book = new BreakerBook(cfg.engines(), cfg.recovery(), cfg.engineContract() != null, clockMs);
    metrics = new BreakerMetrics(registry, book);
    cfg.engines().forEach(e -> metrics.track(e.iid()));
    prober = new Prober(vertx, config);
    long monitor = cfg.recovery().monitorIntervalMs();
    timers.add(vertx.setPeriodic(monitor, t -> apply(book.tick())));
    timers.add(vertx.setPeriodic(cfg.recovery().readmitIntervalMs(), t -> apply(book.readmissionRound())));
    timers.add(vertx.setPeriodic(cfg.recovery().livenessIntervalMs(), t -> livenessSweep()));
    List<MessageConsumer<JsonObject>> consumers = List.of(
        vertx.eventBus().localConsumer(Addresses.BREAKER_OUTCOME, msg -> apply(book.record(LegOutcome.fromJson(msg.body())))),
        vertx.eventBus().localConsumer(Addresses.BREAKER_STATE, msg -> msg.reply(state())),
        vertx.eventBus().consumer(Addresses.ADMIN, this::admin));
    return vertx.sharedData().<String, String>getAsyncMap(SharedState.ENGINE_STATE_MAP)
        .onSuccess(map -> shared = map)
        .compose(map -> Future.all(consumers.stream().map(MessageConsumer::completion).toList()));
  }

  @Override
  public Future<?> stop() {
    timers.forEach(vertx::cancelTimer);
    return prober == null ? Future.succeededFuture() : prober.close();
  }

  private void apply(List<BreakerAction> actions) {
    for (BreakerAction action : actions) {
      if (action instanceof BreakerAction.StateChange change) {
        publish(change);
      } else if (action instanceof BreakerAction.Probe probe) {
        runProbe(probe);
      } else if (action instanceof BreakerAction.FleetHold hold) {
        JsonObject event = new JsonObject().put("fleet_hold", hold.held());
        if (shared != null) shared.put(SharedState.FLEET_HOLD_KEY, event.encode());
        vertx.eventBus().publish(Addresses.FLEET_CHANGED, event);
      }
    }
  }

  private void publish(BreakerAction.StateChange change) {
    if (change.to() == EngineState.EJECTED) metrics.ejected(change.iid(), change.cause());
    if (change.to() == EngineState.SERVING && (change.from() == EngineState.EJECTED || change.from() == EngineState.HELD)) {
      metrics.readmitted(change.iid(), change.cause());
    }
    LOG.info(() -> "engine " + change.iid() + ": " + change.from().wireName() + " → " + change.to().wireName() + " (" + change.cause() + ")");
    JsonObject event = new JsonObject().put("iid", change.iid()).put("state", change.to().wireName()).put("cause", change.cause());
    journal(new JsonObject().put("event", "engine_state").put("iid", change.iid()).put("from", change.from().wireName())
        .put("to", change.to().wireName()).put("cause", change.cause()));
    if (shared != null) shared.put(change.iid(), event.encode());
    vertx.eventBus().publish(Addresses.FLEET_CHANGED, event);
  }

  private void runProbe(BreakerAction.Probe probe) {
    EngineConfig target = engine(probe.iid());
    if (target == null) return;
    Future<ProbeResult> outcome = switch (probe.kind()) {
      case HEALTH -> prober.health(target);
      case INFERENCE -> prober.inference(target, probe.producerIid() == null ? null : engine(probe.producerIid()), this::serving);
      case LIFECYCLE -> prober.lifecycle(target, this::serving);
    };
    outcome.otherwise(err -> ProbeResult.inconclusive("probe error: " + err.getMessage())).onSuccess(result -> {
      metrics.probed(probe.iid(), probe.kind(), result.outcome());
      journal(new JsonObject().put("event", "probe").put("iid", probe.iid()).put("kind", probe.kind().wireName())
          .put("outcome", result.outcome().wireName()).put("detail", result.detail()));
      apply(book.probeResult(probe.iid(), probe.kind(), result.outcome(), result.detail()));
    });
  }

  private void livenessSweep() {
    for (String iid : book.servingEngines()) {
      EngineConfig engine = engine(iid);
      if (engine != null) prober.healthy(engine).onSuccess(ok -> apply(book.liveness(iid, ok)));
    }
  }

  /** Engine events go to the request journal's writer (the router owns the file) as rows with an {@code event} field. */
  private void journal(JsonObject event) {
    vertx.eventBus().send(Addresses.JOURNAL_EVENT, event.put("at", java.time.Instant.now().toString()),
        new io.vertx.core.eventbus.DeliveryOptions().setLocalOnly(true));
  }

  private boolean serving(String iid) {
    return book.state(iid).filter(s -> s == EngineState.SERVING).isPresent();
  }

  private EngineConfig engine(String iid) {
    return book.engines().stream().filter(e -> e.iid().equals(iid)).findFirst().orElse(null);
  }

  private JsonObject state() {
    return new JsonObject().put("engines", book.snapshot()).put("fleet_hold", book.fleetHold());
  }

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
        case "eject" -> replyAfter(msg, book.eject(iid));
        case "readmit" -> replyAfter(msg, book.readmit(iid));
        case "quarantine" -> {
          Object seconds = args.getValue("seconds");
          if (!(seconds instanceof Number n) || n.doubleValue() <= 0) {
            msg.fail(Failures.BAD_MESSAGE, "quarantine: seconds: " + seconds + " is not valid: expected a number > 0");
            return;
          }
          replyAfter(msg, book.quarantine(iid, n.doubleValue()));
        }
        case "drain" -> replyAfter(msg, book.drain(iid, true));
        case "undrain" -> replyAfter(msg, book.drain(iid, false));
        case "wave-restart" -> waveRestart(msg);
        default -> msg.fail(Failures.BAD_MESSAGE, "unknown admin command \"" + command + "\"");
      }
    } catch (RuntimeException e) {
      msg.fail(Failures.BAD_MESSAGE, e.getMessage());
    }
  }

  private void replyAfter(Message<JsonObject> msg, List<BreakerAction> actions) {
    apply(actions);
    msg.reply(state());
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
      replyAfter(msg, book.waveRestarted());
    });
  }

  private String adminToken() {
    String value = env.apply(config.get().admin().tokenEnv());
    return value == null || value.isEmpty() ? null : value;
  }
}
