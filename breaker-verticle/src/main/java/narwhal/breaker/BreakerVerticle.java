package narwhal.breaker;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.SharedData;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.List;
import java.util.UUID;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Engine health (docs/operations.md#breaker-states): wires the breaker's parts on the event bus. The {@link BreakerBook} decides;
 * {@link OutcomeIntake} feeds it leg outcomes from {@link Addresses#BREAKER_OUTCOME} and carries out its decisions;
 * {@link ClusterSync} keeps it and the cluster's shared state in step, through the {@link SharedStateGuard};
 * {@link ProbeScheduler} runs probes, readmission rounds and liveness sweeps; {@link ReplicaRoster} publishes this
 * replica's shared settings and compares them with the other replicas'; {@link AdminHandler} serves
 * {@link Addresses#ADMIN} and, for the health port's admin endpoint, {@link Addresses#ADMIN_LOCAL}. Answers {@link Addresses#BREAKER_STATE} (and, cluster-wide, its roster's view address) with
 * the book, the guard's state and the config drift.
 */
public final class BreakerVerticle extends VerticleBase {
  private final Supplier<NarwhalConfig> config;
  private final MeterRegistry registry;
  private final LongSupplier clockMs;
  private final UnaryOperator<String> env;
  private final UnaryOperator<SharedData> sharedData;
  private final String origin = "breaker-" + UUID.randomUUID().toString().substring(0, 8);
  private BreakerBook book;
  private Prober prober;
  /** Engines whose new address passed its checks, for the reload that applies it. */
  private final java.util.Set<String> repointed = new java.util.HashSet<>();
  private SharedStateGuard guard;
  private ClusterSync sync;
  private ProbeScheduler probes;
  private LivenessSweep liveness;
  private ReplicaRoster roster;
  private java.util.Collection<String> uncheckedAtStart = List.of();

  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs) {
    this(config, registry, clockMs, System::getenv);
  }

  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs, UnaryOperator<String> env) {
    this(config, registry, clockMs, env, UnaryOperator.identity());
  }

  /**
   * @param clockMs    the breaker's clock, epoch milliseconds (quarantine ends travel between replicas in it)
   * @param env        reads environment variables (the admin token); tests pass their own
   * @param sharedData the shared data the breaker's cluster state goes through (tests wrap it to make it fail or stall)
   */
  public BreakerVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, LongSupplier clockMs,
                         UnaryOperator<String> env, UnaryOperator<SharedData> sharedData) {
    this.config = config;
    this.registry = registry;
    this.clockMs = clockMs;
    this.env = env;
    this.sharedData = sharedData;
  }

  /**
   * Engines whose checks at start failed (preflight in its default mode): they start out of placement and serve once
   * the readmission checks, run at once, pass. Set before deploying.
   */
  public BreakerVerticle uncheckedAtStart(java.util.Collection<String> iids) {
    this.uncheckedAtStart = List.copyOf(iids);
    return this;
  }

  @Override
  public Future<?> start() {
    NarwhalConfig cfg = config.get();
    BreakerJournal journal = new BreakerJournal(vertx, origin);
    book = new BreakerBook(cfg.engines(), cfg.recovery(), cfg.engineContract() != null, clockMs, origin);
    BreakerMetrics metrics = new BreakerMetrics(registry, book);
    metrics.trackInTurns(vertx, cfg.engines().stream().map(EngineConfig::iid).toList());
    guard = new SharedStateGuard(vertx, cfg.cluster().sharedState(), registry, journal);
    SharedBreakerState shared = new SharedBreakerState(sharedData.apply(vertx.sharedData()), guard, System::currentTimeMillis,
        narwhal.common.bus.ClusterSeal.of(vertx));
    sync = new ClusterSync(vertx, book, shared, guard, origin, clockMs,
        new DecisionFile(vertx, cfg.cluster().decisionsPath(), origin), journal);
    OutcomeIntake intake = new OutcomeIntake(book, sync, metrics, journal);
    prober = new Prober(vertx, config, env);
    liveness = new LivenessSweep(vertx, config, book, prober, sync, intake, metrics, guard, origin, System::currentTimeMillis);
    probes = new ProbeScheduler(vertx, config, book, prober, shared, sync, intake, liveness, metrics, journal);
    roster = new ReplicaRoster(vertx, shared, book, origin, config, registry);
    AdminHandler admin = new AdminHandler(vertx, book, intake, probes, metrics,
        AdminHandler.token(() -> config.get().admin().token(), env), this::state, roster, shared, System::currentTimeMillis);
    intake.probes(probes::run);
    sync.onExpiry(() -> intake.step(book::tick));
    guard.onClose(sync::resync);
    List<MessageConsumer<?>> consumers = List.of(
        vertx.eventBus().<Object>localConsumer(Addresses.BREAKER_OUTCOME, msg -> intake.outcome(LegOutcome.of(msg.body()))),
        vertx.eventBus().<JsonObject>localConsumer(Addresses.BREAKER_STATE, msg -> msg.reply(state())),
        vertx.eventBus().<JsonObject>consumer(Addresses.ADMIN, admin::handle),
        vertx.eventBus().<JsonObject>localConsumer(Addresses.ADMIN_LOCAL, admin::handle),
        vertx.eventBus().<JsonObject>consumer(ReplicaRoster.adminAddress(origin), admin::handle),
        vertx.eventBus().<JsonObject>consumer(ReplicaRoster.viewAddress(origin), msg -> msg.reply(state())),
        vertx.eventBus().<JsonObject>localConsumer(Addresses.CANDIDATE_CHECK, msg -> probes.candidate(
            EngineConfig.fromJson(msg.body())).onComplete(ar -> msg.reply(ar.succeeded()
                ? new JsonObject().put("passed", ar.result().passed()).put("why", ar.result().detail())
                : new JsonObject().put("passed", false).put("why", String.valueOf(ar.cause().getMessage()))))),
        vertx.eventBus().<JsonObject>localConsumer(Addresses.ENGINES_REPOINTED, msg ->
            msg.body().getJsonArray("iids").forEach(iid -> repointed.add((String) iid))),
        vertx.eventBus().<JsonObject>localConsumer(Addresses.CONFIG_CHANGED, msg -> {
          NarwhalConfig reloaded = config.get();
          metrics.retain(reloaded.engines().stream().map(EngineConfig::iid).toList());
          metrics.trackInTurns(vertx, reloaded.engines().stream().map(EngineConfig::iid).toList());
          java.util.Set<String> checked = java.util.Set.copyOf(repointed);
          repointed.clear();
          intake.step(() -> book.reconfigure(reloaded.engines(), reloaded.recovery(), reloaded.engineContract() != null, checked));
          arm(reloaded);
          roster.refresh("reload");
        }));
    return Future.all(consumers.stream().map(MessageConsumer::completion).toList())
        .compose(v -> sync.start())
        .compose(v -> liveness.start())
        .compose(v -> intake.step(() -> book.unchecked(uncheckedAtStart)))
        .compose(v -> roster.refresh("start"))
        .onSuccess(v -> arm(cfg));
  }

  private void arm(NarwhalConfig cfg) {
    probes.arm();
    sync.arm(cfg.recovery().monitorIntervalMs());
    roster.arm(Math.max(1_000, cfg.recovery().monitorIntervalMs()));
  }

  @Override
  public Future<?> stop() {
    if (probes != null) probes.stop();
    if (sync != null) sync.stop();
    if (liveness != null) liveness.stop();
    Future<Void> left = roster == null ? Future.succeededFuture() : roster.stop();
    return left.eventually(() -> {
      if (guard != null) guard.close();
      return prober == null ? Future.succeededFuture() : prober.close();
    });
  }

  private JsonObject state() {
    return new JsonObject().put("engines", book.snapshot()).put("fleet_hold", book.fleetHold()).put("replica", origin)
        .put("member", narwhal.common.bus.ClusterView.of(vertx).self()).put("shared_state", guard.state())
        .put("config_drift", roster.drift()).put("replicas", roster.replicas());
  }
}
