package narwhal.launcher;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.breaker.BreakerVerticle;
import narwhal.placement.PlacementVerticle;
import narwhal.router.EngineFacts;
import narwhal.router.Preflight;
import narwhal.router.PreflightReport;
import narwhal.router.RouterVerticle;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * One router replica: a Vert.x instance with Prometheus metrics, the embedded simulated fleet when the
 * config asks for it, preflight, then the placement and router verticles. {@link #start} completes when
 * the router listens.
 */
public final class NarwhalNode {
  private final Vertx vertx;
  private final PrometheusMeterRegistry registry;
  private final AtomicReference<NarwhalConfig> config;
  private final EngineFacts facts = new EngineFacts();
  private final List<SimEngine> sims = new ArrayList<>();
  private RouterVerticle router;

  private NarwhalNode(NarwhalConfig config) {
    this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    this.vertx = Vertx.builder()
        .with(new VertxOptions().setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true)))
        .withMetrics(new MicrometerMetricsFactory(registry))
        .build();
    this.config = new AtomicReference<>(config);
  }

  /** What to do when preflight fails. */
  public enum PreflightMode { STRICT, WARN, SKIP }

  public static Future<NarwhalNode> start(NarwhalConfig config, PreflightMode mode, Consumer<String> out) {
    NarwhalNode node = new NarwhalNode(config);
    return node.startSims()
        .compose(v -> mode == PreflightMode.SKIP ? Future.succeededFuture()
            : new Preflight(node.vertx, config, node.facts).run(c -> out.accept(c.line())).compose(report -> {
              out.accept(report.passed() ? "preflight passed" : "preflight FAILED");
              return report.passed() || mode == PreflightMode.WARN ? Future.succeededFuture()
                  : Future.failedFuture(new IllegalStateException("preflight failed; start with --preflight=warn to serve anyway"));
            }))
        .compose(v -> node.vertx.deployVerticle(new PlacementVerticle(config.engines())))
        .compose(v -> node.vertx.deployVerticle(new BreakerVerticle(node.config::get, node.registry, System::currentTimeMillis)))
        .compose(v -> {
          node.router = new RouterVerticle(node.config::get, node.facts, node.registry, -1);
          return node.vertx.deployVerticle(node.router);
        })
        .map(v -> node)
        .recover(err -> node.close().transform(x -> Future.failedFuture(err)));
  }

  /** Runs preflight alone against the configured fleet (starting the embedded one if configured). */
  public static Future<PreflightReport> preflight(NarwhalConfig config, Consumer<String> out) {
    NarwhalNode node = new NarwhalNode(config);
    return node.startSims()
        .compose(v -> new Preflight(node.vertx, config, node.facts).run(c -> out.accept(c.line())))
        .eventually(node::close);
  }

  private Future<Void> startSims() {
    NarwhalConfig cfg = config.get();
    if (!cfg.sim().embedded()) return Future.succeededFuture();
    Future<Void> chain = Future.succeededFuture();
    for (EngineConfig engine : cfg.engines()) {
      chain = chain.compose(v -> SimEngine.start(vertx, new SimEngineOptions().setName(engine.iid())
              .setRole(engine.role().wireName()).setModel(cfg.model()).setHost(engine.host()).setPort(engine.port()))
          .map(sim -> {
            sims.add(sim);
            return null;
          }));
    }
    return chain;
  }

  public int port() {
    return router.actualPort();
  }

  public Future<Void> close() {
    Future<Void> chain = Future.succeededFuture();
    for (SimEngine sim : sims) chain = chain.compose(v -> sim.close());
    return chain.eventually(vertx::close);
  }
}
