package narwhal.launcher;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.SharedData;
import io.vertx.micrometer.MicrometerMetricsOptions;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.auth.SecretFiles;
import narwhal.common.bus.Addresses;
import narwhal.common.config.ConfigOverrides;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.FleetFileWatcher;
import narwhal.common.config.NarwhalConfig;
import narwhal.breaker.BreakerVerticle;
import narwhal.placement.PlacementVerticle;
import narwhal.common.config.ServingConfig;
import narwhal.router.EngineFacts;
import narwhal.router.GuardedMetricsFactory;
import narwhal.router.Preflight;
import narwhal.router.PreflightReport;
import narwhal.router.RouterVerticle;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * One router replica: a Vert.x instance with Prometheus metrics, clustered through Hazelcast when
 * {@code cluster.enabled} ({@link ClusterBootstrap}), the embedded simulated fleet when the config asks for it,
 * preflight, then the placement, breaker and router verticles. {@link #start} completes when the router listens;
 * {@link #shutdown} stops it gracefully.
 */
public final class NarwhalNode {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true).setSendTimeout(2_000);
  /** How often the secret files are re-read. */
  static final long SECRETS_PERIOD_MS = 1_000;

  private final Vertx vertx;
  private final PrometheusMeterRegistry registry;
  private final HazelcastClusterManager cluster;
  private final ClusterHealth health;
  private final AtomicReference<NarwhalConfig> config;
  private final UnaryOperator<String> env;
  private final EngineFacts facts = new EngineFacts();
  private final List<EmbeddedEngines.Running> sims = new ArrayList<>();
  private RouterVerticle router;
  private String routerDeployment;
  private Future<Void> stopping;
  private FleetFileWatcher watcher;
  private EngineSources sources;

  private NarwhalNode(Vertx vertx, PrometheusMeterRegistry registry, HazelcastClusterManager cluster, ClusterHealth health,
                      NarwhalConfig config, UnaryOperator<String> env) {
    this.vertx = vertx;
    this.registry = registry;
    this.cluster = cluster;
    this.health = health;
    this.config = new AtomicReference<>(config);
    this.env = env;
  }

  /** What to do when preflight fails. */
  public enum PreflightMode { STRICT, WARN, SKIP }

  public static Future<NarwhalNode> start(NarwhalConfig config, PreflightMode mode, Consumer<String> out) {
    return start(config, mode, out, System::getenv);
  }

  /** @param env reads environment variables (the admin token, the cluster TLS password, the engines' API key); tests pass their own */
  public static Future<NarwhalNode> start(NarwhalConfig config, PreflightMode mode, Consumer<String> out,
                                          UnaryOperator<String> env) {
    return start(config, mode, out, env, UnaryOperator.identity());
  }

  /**
   * @param sharedData wraps the shared data the breaker's cluster state and placement's load readings go through (tests
   *     make it fail or stall)
   */
  static Future<NarwhalNode> start(NarwhalConfig config, PreflightMode mode, Consumer<String> out, UnaryOperator<String> env,
                                   UnaryOperator<SharedData> sharedData) {
    return startWithSecrets(config, mode, out, env instanceof SecretFiles ? env : new SecretFiles(env), sharedData);
  }

  /** As {@link #start}, {@code env} being the replica's secret source (files re-read by {@link #watchSecrets}). */
  private static Future<NarwhalNode> startWithSecrets(NarwhalConfig config, PreflightMode mode, Consumer<String> out,
                                                      UnaryOperator<String> env, UnaryOperator<SharedData> sharedData) {
    Promise<NarwhalNode> started = Promise.promise();
    List<String> unchecked = new ArrayList<>();
    create(config, env).onFailure(started::fail).onSuccess(node -> node.startSims()
        .compose(v -> mode == PreflightMode.SKIP ? Future.succeededFuture()
            : new Preflight(node.vertx, config, node.facts, env).pairs(node.joining() ? Preflight.Pairs.NONE : Preflight.Pairs.AUTO)
                .run(c -> out.accept(c.line())).compose(report -> {
              if (report.passed()) {
                out.accept("preflight passed");
                return Future.succeededFuture();
              }
              if (mode == PreflightMode.STRICT) {
                out.accept("preflight FAILED");
                return Future.failedFuture(new IllegalStateException("preflight failed; start with --preflight=warn to serve the engines that passed"));
              }
              unchecked.addAll(report.failedEngines(config.engines().stream().map(EngineConfig::iid).toList()));
              out.accept("preflight FAILED" + (unchecked.isEmpty() ? "" : "; unchecked until their checks pass: " + String.join(", ", unchecked)));
              return Future.succeededFuture();
            }))
        .compose(v -> node.vertx.deployVerticle(new PlacementVerticle(node.config::get, node.registry, env, sharedData)))
        .compose(v -> node.vertx.deployVerticle(new BreakerVerticle(node.config::get, node.registry, System::currentTimeMillis, env, sharedData)
            .uncheckedAtStart(unchecked)))
        .compose(v -> {
          node.router = new RouterVerticle(node.config::get, node.facts, node.registry, -1, node::clusterMembers, env);
          return node.vertx.deployVerticle(node.router);
        })
        .onSuccess(id -> {
          node.routerDeployment = id;
          node.watchSecrets();
          started.complete(node);
        })
        // closing is not chained: the chain's futures belong to an event loop that close() ends
        .onFailure(err -> node.close().onComplete(x -> started.fail(err))));
    return started.future();
  }

  /**
   * Re-reads the secret files (client keys, ops and admin token, engine key) every second, off the event loop; a change
   * is announced on {@link Addresses#SECRETS_CHANGED} so the router re-reads its keys, and read afresh by the rest at
   * their next use: a rotated Kubernetes Secret needs no restart.
   */
  private void watchSecrets() {
    if (!(env instanceof SecretFiles files)) return;
    vertx.setPeriodic(SECRETS_PERIOD_MS, t -> vertx.executeBlocking(files::refresh, false).onSuccess(changed -> {
      if (changed) vertx.eventBus().publish(Addresses.SECRETS_CHANGED, null, LOCAL);
    }));
  }

  /** Runs preflight alone against the configured fleet (starting the embedded one if configured), never clustered. */
  public static Future<PreflightReport> preflight(NarwhalConfig config, Consumer<String> out) {
    NarwhalNode node = new NarwhalNode(Vertx.vertx(), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), null, null, config,
        new SecretFiles(System::getenv));
    Promise<PreflightReport> done = Promise.promise();
    node.startSims()
        .compose(v -> new Preflight(node.vertx, config, node.facts, node.env).pairs(Preflight.Pairs.ALL).run(c -> out.accept(c.line())))
        .onComplete(report -> node.close().onComplete(x -> done.handle(report)));
    return done.future();
  }

  /**
   * Builds Vert.x, joined to the cluster when clustered; a replica the configured members refuse (another
   * {@code cluster.name} or {@code cluster.tls.enabled}) gives up after {@code cluster.join_timeout_s} ({@link ClusterHealth}).
   */
  private static Future<NarwhalNode> create(NarwhalConfig config, UnaryOperator<String> env) {
    narwhal.common.bus.ClusterSecret secret;
    try {
      secret = config.cluster().enabled() ? narwhal.common.bus.ClusterSecret.load(config.cluster(), env) : narwhal.common.bus.ClusterSecret.NONE;
    } catch (IllegalArgumentException e) {
      return Future.failedFuture(e);
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    HazelcastClusterManager cluster = config.cluster().enabled() ? ClusterBootstrap.clusterManager(config.cluster(), false) : null;
    ClusterHealth health = cluster == null ? null : ClusterHealth.watch(config.cluster());
    VertxOptions options = new VertxOptions().setPreferNativeTransport(true)
        .setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true));
    Promise<NarwhalNode> created = Promise.promise();
    ClusterBootstrap.start(options, GuardedMetricsFactory.micrometer(registry, config.metrics().vertxHttp()), config.cluster(), cluster, env)
        .onFailure(err -> {
          if (health != null) health.close();
          created.fail(cluster == null ? err : ClusterBootstrap.joinFailure(err, config.cluster()));
        })
        .onSuccess(vertx -> {
          NarwhalNode node = new NarwhalNode(vertx, registry, cluster, health, config, env);
          if (cluster != null) {
            ClusterTrust.start(vertx, cluster, config.cluster(), secret, registry, health);
            LiteMemberLeaves.watch(config.cluster().name(), cluster.getHazelcastInstance());
            announcePeerJoins(vertx, cluster.getHazelcastInstance());
          }
          if (health == null) {
            created.complete(node);
            return;
          }
          // closing is not chained: the chain's futures belong to an event loop that close() ends
          health.joined(vertx, cluster, env).onSuccess(v -> created.complete(node))
              .onFailure(err -> node.close().onComplete(x -> created.fail(err)));
        });
    return created.future();
  }

  /**
   * Tells placement and the breaker when a router replica joins the cluster ({@link Addresses#PLACEMENT_PEER_JOINED}): a new one, or
   * one back from a freeze or a partition. A frozen replica's own view of the shared state may never have failed
   * (nothing ran while it was stopped), so only the membership says that it missed the other replicas' exchanges.
   * Admin commands join as lite members and are not replicas.
   */
  private static void announcePeerJoins(Vertx vertx, com.hazelcast.core.HazelcastInstance hazelcast) {
    hazelcast.getCluster().addMembershipListener(new com.hazelcast.cluster.MembershipListener() {
      @Override
      public void memberAdded(com.hazelcast.cluster.MembershipEvent event) {
        if (!event.getMember().isLiteMember()) {
          // published: placement takes a prefix snapshot, the breaker resyncs with the shared state at its next check
          vertx.eventBus().publish(Addresses.PLACEMENT_PEER_JOINED, null, new io.vertx.core.eventbus.DeliveryOptions().setLocalOnly(true));
        }
      }

      @Override
      public void memberRemoved(com.hazelcast.cluster.MembershipEvent event) {
      }
    });
  }

  private Future<Void> startSims() {
    NarwhalConfig cfg = config.get();
    if (!cfg.sim().embedded()) return Future.succeededFuture();
    return EmbeddedEngines.installed()
        .map(engines -> engines.start(vertx, cfg, cfg.engine().engineApiKey(env)).map(running -> {
          sims.add(running);
          return (Void) null;
        }))
        .orElseGet(() -> Future.failedFuture(new IllegalStateException(NO_SIMULATOR)));
  }

  /** Why a fleet with embedded engines cannot start from {@code narwhal.jar} alone. */
  static final String NO_SIMULATOR = "sim.embedded is true, but narwhal.jar has no simulated engines: they come with the "
      + "tools jar (tools/target/narwhal-tools.jar; ./narwhal serve and ./narwhal demo put it on the class path); "
      + "set sim.embedded to false to route to real engines";

  /**
   * Hot reload (docs/configuration.md): re-reads {@code fleetFile} every second; a valid change becomes the configuration
   * every verticle reads and is announced on {@link Addresses#CONFIG_CHANGED}, an invalid one is refused whole
   * ({@link Addresses#CONFIG_REFUSED}). The {@code reload-config} admin command re-reads it on every replica.
   */
  public Future<Void> watch(java.nio.file.Path fleetFile) {
    return watch(fleetFile, ConfigOverrides.none());
  }

  /** As {@link #watch(java.nio.file.Path)}, re-applying the start-time {@code overrides} to every text read. */
  public Future<Void> watch(java.nio.file.Path fleetFile, ConfigOverrides overrides) {
    watcher = new FleetFileWatcher(vertx, fleetFile.toString(), overrides, config,
        (previous, next) -> vertx.eventBus().publish(Addresses.CONFIG_CHANGED, next.toJson(), LOCAL),
        refused -> vertx.eventBus().publish(Addresses.CONFIG_REFUSED,
            new JsonObject().put("key", refused.key()).put("message", refused.getMessage()), LOCAL))
        .onUnreadable(why -> vertx.eventBus().publish(Addresses.CONFIG_REFUSED,
            new JsonObject().put("unreadable", true).put("message", why), LOCAL))
        .staging(new RepointedEngines(vertx, config))
        .verifying(next -> vertx.executeBlocking(() -> {
          narwhal.router.Access.verifyStart(next, env);
          return null;
        }, false));
    if (config.get().discovery().enabled()) sources = EngineSources.start(vertx, config.get().discovery(), watcher);
    return vertx.eventBus().<Object>consumer(Addresses.CONFIG_RELOAD, msg -> {
      JsonObject body = narwhal.common.bus.ClusterSeal.of(vertx).open(Addresses.CONFIG_RELOAD, msg.body());
      // sealed with the time it was sent: a replayed one is refused once older than the tolerated clock skew
      if (body != null && (!narwhal.common.bus.ClusterSeal.of(vertx).enabled()
          || Math.abs(System.currentTimeMillis() - body.getLong("at_ms", 0L)) <= narwhal.common.bus.ClockBound.MAX_SKEW_MS)) {
        watcher.reloadNow();
      }
    }).completion()
        .compose(v -> watcher.start(1_000));
  }

  /** Re-reads the fleet file now, as the {@code reload-config} admin command does (tests: no wait for the next period). */
  Future<Boolean> reloadNow() {
    return Future.<Boolean>future(p -> vertx.runOnContext(v -> watcher.reloadNow().onComplete(p)));
  }

  public int port() {
    return router.actualPort();
  }

  /** The port of {@code server.health_port} (its {@code /health}, {@code /ready} and admin endpoint), or -1 when none. */
  public int healthPort() {
    return router.healthPort();
  }

  /** The replica's Vert.x instance (tests talk to its local placement and breaker). */
  public Vertx vertx() {
    return vertx;
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /**
   * True when this replica joins a cluster other router replicas already run: they judged the engines (the shared
   * states this replica's breaker adopts), so its preflight learns each engine's facts but checks no handoff pairs.
   */
  boolean joining() {
    return health != null && health.membersSeen() > 1;
  }

  /** The cluster members this replica sees (node ids), or just itself when not clustered. */
  public List<String> clusterMembers() {
    return cluster == null ? List.of("local") : cluster.getNodes();
  }

  /** A line saying how this replica runs: single node, or which cluster with how many members. */
  public String describe() {
    NarwhalConfig cfg = config.get();
    String transport = vertx.isNativeTransportEnabled() ? "epoll transport"
        : "NIO transport (native: " + vertx.unavailableNativeTransportCause() + ")";
    if (cluster == null) return "single node (not clustered), " + transport;
    return transport + ", clustered: member of \"" + cfg.cluster().name() + "\" with " + health.membersSeen() + " member(s)"
        + (health.membersExpected() > 0 ? " of " + health.membersExpected() + " expected" : "")
        + ", Hazelcast on " + cluster.getHazelcastInstance().getCluster().getLocalMember().getAddress()
        + (cfg.cluster().tls().enabled() ? ", event bus TLS" : "");
  }

  /**
   * When a wait of the stop sequence is over: {@code key} is the config key that sets it, {@code ms} its value. The
   * replica uses Vert.x timers; tests end the waits themselves.
   */
  private static final String DRAIN_DELAY = "serving.drain_delay_s";

  interface StopClock {
    Future<Void> after(String key, long ms);
  }

  /**
   * Graceful stop (SIGTERM), docs/configuration.md: readiness turns false at once (draining) while new requests are still
   * served for {@code serving.drain_delay_s}, so a load balancer's health check takes the replica out first; then new
   * requests are refused with 503 {@code shutting_down} and those in flight (counted by the router from admission to
   * their terminal outcome, not by their reservations) finish for up to {@code serving.graceful_timeout_s}; then the
   * router closes, flushing the journal, and the replica leaves the cluster. Engine and breaker state are not touched.
   * Idempotent.
   */
  public Future<Void> shutdown(Consumer<String> out) {
    return shutdown(out, true);
  }

  /**
   * As {@link #shutdown(Consumer)}; {@code drain} false skips {@code serving.drain_delay_s}, for a router no load balancer
   * sends to (the single-node demo): there is nobody to take it out of rotation first.
   */
  public Future<Void> shutdown(Consumer<String> out, boolean drain) {
    return shutdown(out, (key, ms) -> vertx.timer(ms, TimeUnit.MILLISECONDS).mapEmpty(), drain);
  }

  Future<Void> shutdown(Consumer<String> out, StopClock clock) {
    return shutdown(out, clock, true);
  }

  synchronized Future<Void> shutdown(Consumer<String> out, StopClock clock, boolean drain) {
    if (stopping != null) return stopping;
    Promise<Void> stopped = Promise.promise();
    stopping = stopped.future();
    ServingConfig serving = config.get().serving();
    Future<Integer> waited = router == null ? Future.succeededFuture(0) : drainThenRefuse(out, clock, serving, drain);
    waited
        .compose(left -> {
          if (left > 0) out.accept("narwhal: graceful timeout: " + left + " request(s) still in flight are cut");
          return routerDeployment == null ? Future.<Void>succeededFuture() : vertx.undeploy(routerDeployment);
        })
        // close() is called outside the chain: the chain's futures belong to an event loop that close() ends
        .onComplete(ar -> close().onSuccess(v -> out.accept("narwhal: stopped" + (cluster == null ? "" : "; left the cluster")))
            .onComplete(stopped));
    return stopping;
  }

  /** Draining, then refusing; completes with the number of requests still in flight when the graceful timeout ended. */
  private Future<Integer> drainThenRefuse(Consumer<String> out, StopClock clock, ServingConfig serving, boolean drain) {
    router.drain();
    Future<Void> delay = Future.succeededFuture();
    if (drain && serving.drainDelayMs() > 0) {
      out.accept("narwhal: draining: /ready answers 503; new requests are still served for " + serving.drainDelayS() + " s");
      delay = clock.after(DRAIN_DELAY, serving.drainDelayMs());
    }
    return delay.compose(v -> {
      int inFlight = router.refuseNew();
      out.accept("narwhal: stopping: new requests are refused (503 shutting_down)" + (inFlight == 0 ? ""
          : "; waiting up to " + serving.gracefulTimeoutS() + " s for " + inFlight + " in-flight request(s)"));
      if (inFlight == 0) return Future.succeededFuture(0);
      Future<Void> grace = clock.after("serving.graceful_timeout_s", serving.gracefulTimeoutMs());
      return Future.any(router.idle(), grace).map(x -> router.inFlight());
    });
  }

  /**
   * Stops at once: the embedded engines, then Vert.x (leaving the cluster when clustered). The returned future belongs
   * to no event loop, so it completes after Vert.x is gone whichever thread calls this.
   */
  public Future<Void> close() {
    Promise<Void> closed = Promise.promise();
    Future<Void> chain = Future.succeededFuture();
    if (sources != null) sources.close();
    for (EmbeddedEngines.Running sim : sims) chain = chain.compose(v -> sim.close());
    chain.onComplete(ar -> vertx.close().onComplete(v -> {
      if (health != null) health.close();
      closed.handle(v);
    }));
    return closed.future();
  }
}
