package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.EngineClient;
import narwhal.engines.client.EngineClientOptions;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * One event loop's share of the router's HTTP ingress, on the port every instance of a replica shares: builds this
 * loop's engine client and {@link RouterContext}, mounts the edge's handlers on their paths, and starts and stops
 * the server. What each path does lives in its handler: the guards ({@link ReceiveGuard}, which also stamps each
 * request with its {@link RequestKeys}; {@link ClientKeyGuard}, {@link OpsTokenGuard}), the serving endpoints
 * ({@link InferenceHandler}, {@link WholeHandler}), the status routes and the failure mapping ({@link EdgeFailures}).
 * The retry budget, in-flight count, journal and metrics are the replica's ({@link Replica}).
 */
final class RouterInstance extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(RouterInstance.class.getName());
  private static final long CUT_REQUESTS_WAIT_MS = 5_000;

  private final Replica replica;
  private final int port;
  private HttpServer server;
  private EngineClient engines;

  RouterInstance(Replica replica, int port) {
    this.replica = replica;
    this.port = port;
  }

  @Override
  public Future<?> start() {
    NarwhalConfig cfg = replica.config().get();
    engines = new EngineClient(vertx, new EngineClientOptions(cfg.engine().connectTimeoutMs(), cfg.engine().maxConnectionsPerEngine(),
        cfg.serving().maxResponseBytes(), EngineClientOptions.DEFAULT_MAX_EVENT_BYTES, () -> replica.config().get().engine().engineApiKey(replica.env())));
    RouterContext ctx = new RouterContext(vertx, replica.config(), engines, new ControlBusClient(vertx, replica.metrics()),
        replica.retryBudget(), replica.facts(), replica.journal(), replica.metrics(), () -> ThreadLocalRandom.current().nextDouble(),
        replica.admission(), new EndOfTurn(context), replica.models(), replica.tracing());
    HttpServerOptions serverOptions = new HttpServerOptions().setHost(cfg.server().host()).setPort(port).setTcpNoDelay(true)
        .setHttp2ClearTextEnabled(false);
    ReceiveGuard receive = new ReceiveGuard(ctx, serverOptions, replica.connections());
    EdgeFailures failures = new EdgeFailures(ctx, receive);
    return vertx.createHttpServer(serverOptions)
        .connectionHandler(receive::connected).invalidRequestHandler(failures::malformed)
        .requestHandler(router(cfg, ctx, receive, failures)).listen()
        .onSuccess(s -> server = s);
  }

  /**
   * Stops listening and lets requests in flight finish for up to {@code serving.graceful_timeout_s} (a replica whose stop
   * sequence already waited for them, {@link RouterVerticle#refuseNew}, does not wait again); then the requests still
   * running are cut ({@link Admission#cutAll}): each ends with its terminal error and journal row, as
   * {@code graceful_timeout}, before its connection and engine legs close. Ending them first matters: a closed client
   * connection would journal them as disconnects, closed engine legs as engine faults.
   */
  @Override
  public Future<?> stop() {
    Admission admission = replica.admission();
    long graceMs = admission.closed() ? 0 : replica.config().get().serving().gracefulTimeoutMs();
    if (server == null) return engines == null ? Future.succeededFuture() : engines.close();
    long cutTimer = vertx.setTimer(Math.max(1, graceMs), t -> admission.cutAll());
    return server.shutdown(graceMs + CUT_REQUESTS_WAIT_MS, TimeUnit.MILLISECONDS).compose(v -> {
      vertx.cancelTimer(cutTimer);
      admission.close();
      return admission.idle().timeout(CUT_REQUESTS_WAIT_MS, TimeUnit.MILLISECONDS).otherwise(err -> {
        LOG.warning(() -> "stopping: " + admission.inFlight() + " cut request(s) did not end; their journal rows are missing");
        return null;
      });
    }).compose(v -> engines == null ? Future.succeededFuture() : engines.close());
  }

  /** The port the server listens on. */
  int actualPort() {
    return server.actualPort();
  }

  private Router router(NarwhalConfig cfg, RouterContext ctx, ReceiveGuard receive, EdgeFailures failures) {
    Router router = Router.router(vertx);
    router.route().handler(receive::headArrived);
    router.route().handler(Cors.forClientPaths(cfg.server().cors()));
    BodyHandler body = BodyHandler.create(false).setBodyLimit(cfg.serving().maxRequestBytes());
    ClientKeyGuard clientKey = new ClientKeyGuard(ctx, replica.access());
    router.route("/v1/*").handler(clientKey);
    router.post("/v1/*").handler(receive::declaredSize);
    router.post("/v1/completions").handler(body).handler(receive::framed).handler(new InferenceHandler(ctx, false));
    router.post("/v1/chat/completions").handler(body).handler(receive::framed).handler(new InferenceHandler(ctx, true));
    for (String path : WholeHandler.ENDPOINTS) {
      if (!path.startsWith("/v1/")) router.route(path).handler(clientKey);
      if (!path.startsWith("/v1/")) router.post(path).handler(receive::declaredSize);
      router.post(path).handler(body).handler(receive::framed).handler(new WholeHandler(ctx, replica.responseOwners(), path));
    }
    router.get("/v1/responses/:response_id").handler(WholeHandler.stored(ctx, replica.responseOwners(), false));
    router.post("/v1/responses/:response_id/cancel").handler(body).handler(receive::framed)
        .handler(WholeHandler.stored(ctx, replica.responseOwners(), true));
    router.get("/v1/models").handler(new ModelsRoute(ctx.controlBus()));
    router.get("/health").handler(rc -> ReadinessAnswer.health(rc.response()));
    router.get("/ready").handler(rc -> {
      String models = rc.request().getParam("models");
      if (!ReadinessAnswer.refusedScope(models, rc.response())) replica.readiness().ready(rc.response(), models != null);
    });
    OpsTokenGuard opsToken = new OpsTokenGuard(replica.access());
    router.get("/metrics").handler(opsToken).handler(new MetricsRoute(replica.registry()));
    router.get("/narwhal/state").handler(opsToken).handler(new StateRoute(replica, ctx.controlBus(), vertx));
    router.route().last().handler(EdgeFailures::unrouted);
    router.route().failureHandler(failures::failure);
    return router;
  }
}
