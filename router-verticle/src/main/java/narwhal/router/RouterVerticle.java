package narwhal.router;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The router of one replica: owns what is per replica (the journal, the retry budget, the in-flight count,
 * metrics, reload handling) and serves HTTP from {@code server.event_loops} {@link RouterInstance}s, child
 * deployments that share one port, so a replica uses that many cores. Undeploying it stops the instances
 * (gracefully, see {@link RouterInstance#stop}) before the journal is flushed and closed.
 */
public final class RouterVerticle extends VerticleBase {
  private static final AtomicInteger ANY_PORT_KEYS = new AtomicInteger();

  /** What the instances of one replica share; every part is thread-safe. */
  record Shared(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, RouterMetrics metrics,
                Journal journal, RetryBudget retryBudget, AtomicInteger inFlight, Supplier<List<String>> members,
                UnaryOperator<String> env) {
  }

  private final Supplier<NarwhalConfig> config;
  private final EngineFacts facts;
  private final MeterRegistry registry;
  private final int portOverride;
  private final Supplier<List<String>> members;
  private final UnaryOperator<String> env;
  private Shared shared;
  private volatile RouterInstance first;

  /** @param portOverride the port to listen on instead of {@code server.port}; -1 to use the configured one, 0 for any */
  public RouterVerticle(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, int portOverride) {
    this(config, facts, registry, portOverride, () -> List.of("local"));
  }

  /** @param members the cluster members this replica sees, for {@code /narwhal/state} */
  public RouterVerticle(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, int portOverride,
                        Supplier<List<String>> members) {
    this(config, facts, registry, portOverride, members, System::getenv);
  }

  /** @param env reads environment variables (the engines' API key); tests pass their own */
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
    RetryBudget retryBudget = new RetryBudget(cfg.serving().retryBudget(), cfg.serving().retryReplenish());
    return Journal.open(vertx, cfg.journal().path()).compose(journal -> {
      RouterMetrics metrics = new RouterMetrics(registry, retryBudget::credits, cfg.engines());
      shared = new Shared(config, facts, registry, metrics, journal, retryBudget, new AtomicInteger(), members, env);
      vertx.eventBus().<JsonObject>localConsumer(Addresses.JOURNAL_EVENT, msg -> journal.append(msg.body()));
      vertx.eventBus().<JsonObject>localConsumer(Addresses.CONFIG_CHANGED, msg -> reconfigured());
      vertx.eventBus().<JsonObject>localConsumer(Addresses.CONFIG_REFUSED, msg -> metrics.configReload(false));
      int port = portOverride >= 0 ? portOverride : cfg.server().port();
      // Vert.x shares a port among servers listening on the same one; port 0 is shared through a negative key
      int listenPort = port == 0 ? -ANY_PORT_KEYS.incrementAndGet() : port;
      return vertx.deployVerticle(() -> instance(new RouterInstance(shared, listenPort)),
          new DeploymentOptions().setInstances(cfg.server().eventLoops()));
    }).recover(err -> closeJournal().transform(x -> Future.failedFuture(err)));
  }

  private synchronized RouterInstance instance(RouterInstance instance) {
    if (first == null) first = instance;
    return instance;
  }

  /** Runs after Vert.x has stopped the instances (child deployments are undeployed first). */
  @Override
  public Future<?> stop() {
    return closeJournal();
  }

  private Future<Void> closeJournal() {
    return shared == null ? Future.succeededFuture() : shared.journal().close();
  }

  /** A reloaded fleet file: timeouts and limits are read per request; the retry pool and engine series follow here. */
  private void reconfigured() {
    NarwhalConfig cfg = config.get();
    shared.retryBudget().resize(cfg.serving().retryBudget(), cfg.serving().retryReplenish());
    shared.metrics().track(cfg.engines());
    shared.metrics().configReload(true);
  }

  /** The port the router listens on. */
  public int actualPort() {
    return first.actualPort();
  }
}
