package narwhal.router;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.StartOnlyKeys;
import narwhal.router.telemetry.TraceExport;
import narwhal.router.telemetry.Tracing;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * The router of one replica: owns what is per replica (the journal, the retry budget, the admission of requests
 * with its in-flight count and stop sequence, metrics, reload handling) and serves HTTP from {@code server.event_loops} {@link RouterInstance}s, child
 * deployments that share one port, so a replica uses that many cores. Undeploying it stops the instances
 * (gracefully, see {@link RouterInstance#stop}) before the journal is flushed and closed.
 */
public final class RouterVerticle extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(RouterVerticle.class.getName());
  private static final AtomicInteger ANY_PORT_KEYS = new AtomicInteger();
  /** The longest an admin command from the health port waits for the breaker (a wave restart validates the fleet). */
  private static final long ADMIN_TIMEOUT_MS = 30_000;

  private final Supplier<NarwhalConfig> config;
  private final EngineFacts facts;
  private final MeterRegistry registry;
  private final int portOverride;
  private final Supplier<List<String>> members;
  private final UnaryOperator<String> env;
  private final Admission admission = new Admission();
  /** The node's placement, once it is deployed (the engines' room is asked of it several times a request). */
  private volatile narwhal.common.bus.LocalPlacement localPlacement;
  private Replica shared;
  /** The configuration this replica started with (start-only keys keep its values) and the last one applied. */
  private NarwhalConfig startedWith;
  private NarwhalConfig lastApplied;
  private FactsRelearner relearner;
  private volatile RouterInstance first;
  private volatile HealthListener health;

  /** @param portOverride the port to listen on instead of {@code server.port}; -1 to use the configured one, 0 for any */
  public RouterVerticle(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, int portOverride) {
    this(config, facts, registry, portOverride, () -> List.of("local"));
  }

  /** @param members the cluster members this replica sees, for {@code /narwhal/state} */
  public RouterVerticle(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, int portOverride,
                        Supplier<List<String>> members) {
    this(config, facts, registry, portOverride, members, System::getenv);
  }

  /** @param env reads environment variables (client keys, ops token, engine key); tests pass their own */
  public RouterVerticle(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, int portOverride,
                        Supplier<List<String>> members, UnaryOperator<String> env) {
    this.env = env;
    this.config = config;
    this.facts = facts;
    this.registry = registry;
    this.portOverride = portOverride;
    this.members = members;
  }

  /** Completes when every instance listens on the one port (any free one for 0) they share. */
  @Override
  public Future<?> start() {
    NarwhalConfig cfg = config.get();
    startedWith = cfg;
    lastApplied = cfg;
    RetryBudget retryBudget = new RetryBudget(cfg.serving().retryBudget(), cfg.serving().retryReplenish());
    AtomicReference<Access> access;
    try {
      access = new AtomicReference<>(Access.resolve(cfg, env));
    } catch (ConfigException e) {
      return Future.failedFuture(e);
    }
    Tracing tracing;
    try {
      tracing = Tracing.start(TraceExport.resolve(cfg.telemetry(), env), env);
    } catch (ConfigException e) {
      return Future.failedFuture(e);
    }
    return Journal.open(vertx, cfg.journal()).compose(journal -> {
      RouterMetrics metrics = new RouterMetrics(registry, retryBudget::credits, cfg.engines());
      io.micrometer.core.instrument.FunctionCounter.builder("narwhal.journal.dropped.rows", journal, Journal::droppedRows)
          .description("journal rows that could not be written (full disk, I/O error), each dropped whole").register(registry);
      clusterGauges(registry);
      legGauges(registry);
      admission.onWait((lane, nanos) -> metrics.flowWait(lane.tenant().priorityClass(), nanos));
      admission.onReservedForHigh(() -> config.get().flow().reservedForHigh());
      admission.onPrefillLegsMax(() -> config.get().flow().prefillLegsMax());
      admission.onBurst(() -> config.get().flow().burst());
      admission.onEngineRoom(model -> {
        int queueMax = config.get().flow().engineQueueMax();
        if (queueMax <= 0) return null;
        // asked several times a request: the node's placement is looked up once it is there, not every time
        narwhal.common.bus.LocalPlacement placement = localPlacement;
        if (placement == null) placement = localPlacement = narwhal.common.bus.LocalPlacement.of(vertx);
        return placement == null ? null : placement.room(model, queueMax);
      });
      shared = new Replica(config, facts, registry, metrics, journal, retryBudget, admission, members, env, access,
          new AtomicReference<>(List.of()), new ModelMetrics(registry, cfg.models()), tracing, new ResponseOwners(),
          new ReadinessAnswer(admission, vertx), ClientConnections.of(registry));
      vertx.eventBus().<JsonObject>localConsumer(Addresses.JOURNAL_EVENT, msg -> {
        journal.append(msg.body());
        if (msg.replyAddress() != null) msg.reply(null);
      });
      relearner = new FactsRelearner(vertx, config, facts, env);
      vertx.eventBus().<JsonObject>localConsumer(Addresses.PLACEMENT_LISTED, msg -> relearner.listed(msg.body()));
      vertx.eventBus().<JsonObject>localConsumer(FactsRelearner.RELEARN, msg -> relearner.relearn(msg.body().getString("iid"))
          .onComplete(changed -> msg.reply(changed.succeeded() && changed.result())));
      vertx.eventBus().<Object>consumer(Addresses.FLEET_CHANGED, msg -> {
        narwhal.common.bus.EngineStateEvent event = narwhal.common.bus.EngineStateEvent.fromJson(
            narwhal.common.bus.ClusterSeal.of(vertx).open(Addresses.FLEET_CHANGED, msg.body()));
        if (event != null && event.state() == narwhal.common.bus.EngineState.SERVING) relearner.readmitted(event.iid());
      });
      vertx.eventBus().<JsonObject>localConsumer(Addresses.CONFIG_CHANGED, msg -> reconfigured());
      quotaExchange();
      vertx.eventBus().<Object>localConsumer(Addresses.SECRETS_CHANGED, msg -> reread(config.get(), "a secret file changed"));
      vertx.eventBus().<JsonObject>localConsumer(Addresses.CONFIG_REFUSED, msg -> {
        if (msg.body() != null && msg.body().getBoolean("unreadable", false)) metrics.configUnreadable();
        else metrics.configReload(false);
      });
      int port = portOverride >= 0 ? portOverride : cfg.server().port();
      // Vert.x shares a port among servers listening on the same one; port 0 is shared through a negative key
      int listenPort = port == 0 ? -ANY_PORT_KEYS.incrementAndGet() : port;
      return vertx.deployVerticle(() -> instance(new RouterInstance(shared, listenPort)),
          new DeploymentOptions().setInstances(cfg.server().eventLoops()));
    }).compose(v -> healthListener(cfg)).recover(err -> closeJournal().eventually(() -> tracing.close(vertx)).transform(x -> Future.failedFuture(err)));
  }

  /** {@code server.health_port}, when set: its own listener, started once the client port listens. */
  private Future<Void> healthListener(NarwhalConfig cfg) {
    if (cfg.server().healthPort() == narwhal.common.config.ServerConfig.NO_HEALTH_PORT) return Future.succeededFuture();
    return HealthListener.start(cfg.server().host(), cfg.server().healthPort(), shared.readiness(), new AdminEndpoint(this::adminLocally))
        .onSuccess(listener -> health = listener).mapEmpty();
  }

  /**
   * An admin command from the health port's endpoint, handed to this replica's breaker on its local-only address from
   * this verticle's context (the endpoint runs on the listener's own Vert.x); completes on this replica's loop.
   */
  private Future<JsonObject> adminLocally(JsonObject body) {
    io.vertx.core.Promise<JsonObject> answered = io.vertx.core.Promise.promise();
    context.runOnContext(v -> vertx.eventBus().<JsonObject>request(Addresses.ADMIN_LOCAL, body,
            new io.vertx.core.eventbus.DeliveryOptions().setLocalOnly(true).setSendTimeout(ADMIN_TIMEOUT_MS))
        .map(io.vertx.core.eventbus.Message::body).onComplete(answered));
    return answered.future();
  }

  /** This replica's standing in its cluster ({@link narwhal.common.bus.ClusterView}, docs/metrics.md). */
  private void clusterGauges(MeterRegistry registry) {
    io.micrometer.core.instrument.Gauge.builder("narwhal.cluster.members", vertx, v -> narwhal.common.bus.ClusterView.of(v).membersSeen())
        .description("router replicas in the cluster this replica is in, itself included").register(registry);
    io.micrometer.core.instrument.Gauge.builder("narwhal.cluster.members.expected", vertx,
        v -> narwhal.common.bus.ClusterView.of(v).membersExpected())
        .description("router replicas the cluster should have (cluster.expected_members, or the Kubernetes service's ready endpoints)")
        .register(registry);
    io.micrometer.core.instrument.Gauge.builder("narwhal.cluster.discovery.failing", vertx,
        v -> narwhal.common.bus.ClusterView.of(v).discoveryFailing() ? 1 : 0)
        .description("1 while the look-up of the peers through Kubernetes discovery fails (RBAC, DNS, the API unreachable)")
        .register(registry);
    io.micrometer.core.instrument.Gauge.builder("narwhal.discovery.stale", vertx,
        v -> narwhal.common.bus.DiscoveryStatus.of(v).stale() ? 1 : 0)
        .description("1 while engine discovery from the Kubernetes API cannot list or watch (unreachable, refused): the last known engines stay")
        .register(registry);
    io.micrometer.core.instrument.Gauge.builder("narwhal.cluster.refused", vertx, v -> narwhal.common.bus.ClusterView.of(v).refusal() == null ? 0 : 1)
        .description("1 while the members this replica is configured to join refuse it (another cluster.name or cluster.tls.enabled)")
        .register(registry);
    io.micrometer.core.instrument.Gauge.builder("narwhal.cluster.unverified.members", vertx,
        v -> narwhal.common.bus.ClusterView.of(v).unverifiedMembers())
        .description("members of the Hazelcast cluster without a valid membership proof (the cluster secret)").register(registry);
    // every series at zero from start; the launcher's ClusterSeal hook counts into the same meters
    narwhal.common.bus.ClusterSeal.SEALED.forEach(where -> io.micrometer.core.instrument.Counter.builder("narwhal.cluster.forged")
        .description("values and bus messages refused because their tag does not verify with the cluster secret")
        .tag("where", where).register(registry));
  }

  /**
   * Every second, each tenant's quotas are leased again from what every replica reported ({@link TenantQuotas}), and
   * this replica's own report goes to the others on the cluster bus, sealed (a forged or foreign one is left out).
   */
  private void quotaExchange() {
    TenantQuotas quotas = admission.quotas();
    narwhal.common.bus.FlowStatus.publish(vertx, () -> admission.queueJson().put("quotas", quotas.toJson()));
    vertx.eventBus().<Object>consumer(Addresses.TENANT_USAGE, msg -> {
      narwhal.common.bus.ClusterSeal seal = narwhal.common.bus.ClusterSeal.of(vertx);
      narwhal.common.bus.UsageReport report = narwhal.common.bus.UsageReport.fromJson(seal.open(Addresses.TENANT_USAGE, msg.body()));
      if (report != null && !report.origin().equals(self())) quotas.heard(report);
    });
    vertx.setPeriodic(TenantQuotas.SETTLE_MS, t -> {
      narwhal.common.bus.ClusterView view = narwhal.common.bus.ClusterView.of(vertx);
      int members = Math.max(view.membersSeen(), view.membersExpected());
      narwhal.common.bus.UsageReport mine = quotas.settle(self(), members, config.get().tenants().all());
      if (!mine.tenants().isEmpty() && vertx.isClustered()) {
        vertx.eventBus().publish(Addresses.TENANT_USAGE, narwhal.common.bus.ClusterSeal.of(vertx).seal(Addresses.TENANT_USAGE, mine.toJson()));
      }
    });
  }

  /** This replica's id on the cluster: its sealing id, else its cluster address. */
  private String self() {
    String sealed = narwhal.common.bus.ClusterSeal.of(vertx).replica();
    return sealed == null || sealed.isEmpty() ? narwhal.common.bus.ClusterView.of(vertx).self() : sealed;
  }

  /** The attempts running legs and waiting for a turn under {@code serving.max_legs_in_flight} (docs/metrics.md). */
  private void legGauges(MeterRegistry registry) {
    io.micrometer.core.instrument.Gauge.builder("narwhal.legs.in.flight", admission, Admission::legsInFlight)
        .description("attempts running their legs against engines now (serving.max_legs_in_flight)").register(registry);
    io.micrometer.core.instrument.Gauge.builder("narwhal.legs.waiting", admission, Admission::legsWaiting)
        .description("attempts waiting for a turn before their first leg (serving.max_legs_in_flight)").register(registry);

  }

  private synchronized RouterInstance instance(RouterInstance instance) {
    if (first == null) first = instance;
    return instance;
  }

  /**
   * Runs after Vert.x has stopped the instances (child deployments are undeployed first), which waited for the
   * requests they cut to end ({@link RouterInstance#stop}): their rows are in the journal it flushes and closes.
   */
  @Override
  public Future<?> stop() {
    Future<Void> healthClosed = health == null ? Future.succeededFuture() : health.close(context);
    return healthClosed.eventually(this::closeJournal).eventually(() -> shared == null ? Future.succeededFuture() : shared.tracing().close(vertx));
  }

  private Future<Void> closeJournal() {
    Future<Void> checks = relearner == null ? Future.succeededFuture() : relearner.close();
    return checks.eventually(() -> shared == null ? Future.succeededFuture() : shared.journal().close());
  }

  /**
   * A reloaded fleet file: timeouts and limits are read per request; the retry pool and engine series follow here.
   * Keys read only at start ({@link StartOnlyKeys}) that differ from the running ones are reported as waiting for a
   * restart; a reload that changed nothing else is counted {@code restart_pending}, not {@code applied}.
   */
  private void reconfigured() {
    NarwhalConfig cfg = config.get();
    List<String> changed = StartOnlyKeys.changedKeys(lastApplied, cfg);
    lastApplied = cfg;
    List<String> pending = StartOnlyKeys.changed(startedWith, cfg);
    if (!pending.isEmpty()) {
      LOG.warning(() -> "fleet file: " + String.join(", ", pending) + " changed; read only at start, the running value stays"
          + " until this replica restarts");
    }
    boolean onlyStartKeys = !changed.isEmpty() && changed.stream().allMatch(StartOnlyKeys::startOnly);
    if (onlyStartKeys) shared.metrics().configRestartPending(pending.size());
    else {
      shared.metrics().restartPendingKeys(pending.size());
      shared.metrics().configReload(true);
    }
    // after the counters: whoever sees the pending keys in /narwhal/state sees the reload counted
    shared.restartPending().set(pending);
    relearner.reloaded(cfg.engines());
    shared.retryBudget().resize(cfg.serving().retryBudget(), cfg.serving().retryReplenish());
    shared.metrics().track(cfg.engines());
    shared.models().register(cfg.models());
    admission.quotas().retain(cfg.tenants().byName().keySet());
    reread(cfg, "reloaded fleet file");
  }

  /** Re-reads the client keys and ops token; one that cannot be read keeps the previous ones (logged with {@code why}). */
  private void reread(NarwhalConfig cfg, String why) {
    try {
      shared.access().set(Access.resolve(cfg, env));
    } catch (ConfigException e) {
      LOG.warning(() -> why + ": keeping the previous client keys and ops token: " + e.getMessage());
    }
  }

  /**
   * First step of a graceful stop: {@code /ready} answers 503 (draining) so a load balancer takes the replica out,
   * while new requests are still served.
   */
  public void drain() {
    admission.drain();
  }

  /**
   * Second step: new requests are refused with 503 {@code shutting_down} from now on. Returns the number of requests
   * in flight; {@link #idle} completes when they have all ended.
   */
  public int refuseNew() {
    return admission.close();
  }

  /** Completes once new requests are refused and none is in flight. */
  public Future<Void> idle() {
    return admission.idle();
  }

  /** Requests admitted and not yet ended (each counted from admission to its terminal outcome). */
  public int inFlight() {
    return admission.inFlight();
  }

  /** The port the router listens on. */
  public int actualPort() {
    return first.actualPort();
  }

  /** The port {@code /health} and {@code /ready} have of their own ({@code server.health_port}), or -1 when none. */
  public int healthPort() {
    return health == null ? -1 : health.actualPort();
  }
}
