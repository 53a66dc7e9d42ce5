package narwhal.router;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.EngineClient;
import narwhal.engines.client.EngineClientOptions;

import java.time.Instant;
import java.util.logging.Logger;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

/**
 * One event loop's share of the router's HTTP ingress (docs/errors.md): the OpenAI-compatible inference endpoints,
 * models, health, readiness, metrics and state, on the port every instance of a replica shares. Every response
 * carries {@code x-request-id} (the client's own when it sent one, else the router's). Each admitted request runs in its own {@link RequestLifecycle} with
 * this loop's engine client; the retry budget, in-flight count, journal and metrics are the replica's
 * ({@link RouterVerticle}). Engine health is never decided here, only reported to the breaker.
 */
final class RouterInstance extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(RouterInstance.class.getName());
  private static final long CUT_REQUESTS_WAIT_MS = 5_000;
  /** Routing-context keys: the router's request id, and the timer bounding how long the body may take to arrive. */
  static final String RID = "narwhal.rid";
  private static final String RECEIVE_TIMER = "narwhal.receive.timer";
  static final String DRAINING = "draining: this router replica is stopping";
  /** The router's paths and the methods each answers: another method on one of them is a 405 naming these. */
  static final java.util.Map<String, String> ALLOWED_METHODS = java.util.Map.ofEntries(java.util.Map.entry("/v1/completions", "POST"),
      java.util.Map.entry("/v1/chat/completions", "POST"), java.util.Map.entry("/v1/models", "GET"), java.util.Map.entry("/health", "GET"),
      java.util.Map.entry("/ready", "GET"), java.util.Map.entry("/metrics", "GET"), java.util.Map.entry("/narwhal/state", "GET"),
      java.util.Map.entry("/v1/embeddings", "POST"), java.util.Map.entry("/v1/responses", "POST"),
      java.util.Map.entry("/tokenize", "POST"), java.util.Map.entry("/detokenize", "POST"));

  private final RouterVerticle.Shared shared;
  private final Supplier<NarwhalConfig> config;
  private final int port;
  private HttpServer server;
  private HttpServerOptions serverOptions;
  private EngineClient engines;
  private RouterContext ctx;
  private final java.util.Map<HttpConnection, Long> awaitingFirstRequest = new java.util.HashMap<>();
  private final java.util.Set<HttpConnection> brokenBodies = new java.util.HashSet<>();

  RouterInstance(RouterVerticle.Shared shared, int port) {
    this.shared = shared;
    this.config = shared.config();
    this.port = port;
  }

  @Override
  public Future<?> start() {
    NarwhalConfig cfg = config.get();
    engines = new EngineClient(vertx, new EngineClientOptions(cfg.engine().connectTimeoutMs(), cfg.engine().maxConnectionsPerEngine(),
        cfg.serving().maxResponseBytes(), EngineClientOptions.DEFAULT_MAX_EVENT_BYTES, cfg.engine().engineApiKey(shared.env())));
    ctx = new RouterContext(vertx, config, engines, new ControlBusClient(vertx, shared.metrics()), shared.retryBudget(),
        shared.facts(), shared.journal(), shared.metrics(), () -> ThreadLocalRandom.current().nextDouble(), shared.admission(),
        new EndOfTurn(context), shared.models(), shared.tracing());
    serverOptions = new HttpServerOptions().setHost(cfg.server().host()).setPort(port).setTcpNoDelay(true)
        .setHttp2ClearTextEnabled(false);
    return vertx.createHttpServer(serverOptions)
        .connectionHandler(this::connected).invalidRequestHandler(this::malformed).requestHandler(router(cfg)).listen()
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
    long graceMs = shared.admission().closed() ? 0 : config.get().serving().gracefulTimeoutMs();
    if (server == null) return engines == null ? Future.succeededFuture() : engines.close();
    long cutTimer = vertx.setTimer(Math.max(1, graceMs), t -> shared.admission().cutAll());
    return server.shutdown(graceMs + CUT_REQUESTS_WAIT_MS, TimeUnit.MILLISECONDS).compose(v -> {
      vertx.cancelTimer(cutTimer);
      shared.admission().close();
      return shared.admission().idle().timeout(CUT_REQUESTS_WAIT_MS, TimeUnit.MILLISECONDS).otherwise(err -> {
        LOG.warning(() -> "stopping: " + shared.admission().inFlight() + " cut request(s) did not end; their journal rows are missing");
        return null;
      });
    }).compose(v -> engines == null ? Future.succeededFuture() : engines.close());
  }

  private void connected(HttpConnection connection) {
    FramingGuard.install(connection, serverOptions, () -> brokenBodies.add(connection));
    firstRequestDeadline(connection);
  }

  /**
   * A request head the HTTP decoder could not read or refused ({@link FramingDecoder}): 4xx with the contract's
   * error and a journal row, then close; the decoder reads nothing more from the connection.
   */
  private void malformed(HttpServerRequest request) {
    Throwable cause = request.decoderResult().cause();
    EdgeError error = cause instanceof TooLongHttpLineException
        ? new EdgeError(414, "invalid_request_error", "request line too long", null, null, "invalid_request", false)
        : cause instanceof TooLongHttpHeaderException
        ? new EdgeError(431, "invalid_request_error", "request headers too large", null, null, "invalid_request", false)
        : EdgeError.invalid(cause instanceof FramingDecoder.Refused ? cause.getMessage() : "malformed HTTP request", null);
    ctx.metrics().offered();
    String rid = UUID.randomUUID().toString();
    request.response().putHeader("x-request-id", rid).putHeader("connection", "close");
    EdgeRefusal.refuse(ctx, request, rid, Instant.now(), System.nanoTime(), error, "invalid");
    request.connection().close();
  }

  /** A body whose framing broke (e.g. a bad chunk size) is refused, never served from what arrived. */
  private void framed(RoutingContext rc) {
    if (!brokenBodies.remove(rc.request().connection())) {
      rc.next();
      return;
    }
    received(ctx, rc);
    ctx.metrics().offered();
    EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("malformed HTTP request body framing", null), "invalid");
  }

  /**
   * A connection must deliver its first request's headers within {@code serving.receive_timeout_s}, else it is
   * closed: a client that connects and sends nothing, or dribbles its headers, holds nothing for long.
   */
  private void firstRequestDeadline(HttpConnection connection) {
    long timer = vertx.setTimer(config.get().serving().receiveTimeoutMs(), t -> {
      if (awaitingFirstRequest.remove(connection) != null) connection.close();
    });
    awaitingFirstRequest.put(connection, timer);
    connection.closeHandler(v -> {
      brokenBodies.remove(connection);
      Long pending = awaitingFirstRequest.remove(connection);
      if (pending != null) vertx.cancelTimer(pending);
    });
  }

  /** The port the server listens on. */
  int actualPort() {
    return server.actualPort();
  }

  private Router router(NarwhalConfig cfg) {
    Router router = Router.router(vertx);
    router.route().handler(rc -> {
      String rid = UUID.randomUUID().toString();
      rc.put(RID, rid);
      Long headerTimer = awaitingFirstRequest.remove(rc.request().connection());
      if (headerTimer != null) vertx.cancelTimer(headerTimer);
      EdgeRefusal.arrived(rc);
      String own = rc.request().getHeader("x-request-id");
      rc.response().putHeader("x-request-id", own != null && !own.isEmpty() ? own : rid);
      rc.next();
    });
    router.route().handler(Cors.handler(cfg.server().cors()));
    BodyHandler body = BodyHandler.create(false).setBodyLimit(cfg.serving().maxRequestBytes());
    router.route("/v1/*").handler(this::clientKey);
    router.post("/v1/*").handler(this::declaredSize);
    router.post("/v1/completions").handler(body).handler(this::framed).handler(new InferenceHandler(ctx, false));
    router.post("/v1/chat/completions").handler(body).handler(this::framed).handler(new InferenceHandler(ctx, true));
    for (String path : WholeHandler.ENDPOINTS) {
      if (!path.startsWith("/v1/")) router.route(path).handler(this::clientKey);
      if (!path.startsWith("/v1/")) router.post(path).handler(this::declaredSize);
      router.post(path).handler(body).handler(this::framed).handler(new WholeHandler(ctx, shared.responseOwners(), path));
    }
    router.get("/v1/models").handler(this::models);
    router.get("/health").handler(rc -> ReadinessAnswer.health(rc.response()));
    router.get("/ready").handler(rc -> shared.readiness().ready(rc.response()));
    router.get("/metrics").handler(this::opsToken).handler(this::metrics);
    router.get("/narwhal/state").handler(this::opsToken).handler(this::state);
    router.route().last().handler(RouterInstance::unrouted);
    router.route().failureHandler(this::failure);
    return router;
  }

  /**
   * No route took the request: 405 with {@code Allow} for a known path asked with another method (as vLLM's
   * FastAPI answers), else 404.
   */
  private static void unrouted(RoutingContext rc) {
    String path = rc.request().path();
    String allowed = ALLOWED_METHODS.get(path);
    if (allowed != null) {
      rc.response().putHeader("allow", allowed);
      EdgeError.methodNotAllowed(rc.request().method().name(), path, allowed).send(rc.response());
      return;
    }
    new EdgeError(404, "invalid_request_error", "no route for " + rc.request().method() + " " + path, null, null, "not_found", false)
        .send(rc.response());
  }

  /** The request's body has arrived: its receive timer (armed by {@link #declaredSize}) stops. */
  static void received(RouterContext ctx, RoutingContext rc) {
    Long timer = rc.get(RECEIVE_TIMER);
    if (timer != null) ctx.vertx().cancelTimer(timer);
  }

  /** Refuses a body whose declared length is over the limit before reading any of it; bounds the time to receive it. */
  private void declaredSize(RoutingContext rc) {
    long receiveMs = config.get().serving().receiveTimeoutMs();
    rc.put(RECEIVE_TIMER, vertx.setTimer(receiveMs, t -> {
      if (rc.response().headWritten() || rc.response().closed()) return;
      rc.response().putHeader("connection", "close");
      ctx.metrics().offered();
      EdgeRefusal.refuse(ctx, rc, EdgeError.receiveTimeout(receiveMs), "invalid");
      rc.request().connection().close();
    }));
    String length = rc.request().getHeader("content-length");
    long limit = config.get().serving().maxRequestBytes();
    try {
      if (length != null && Long.parseLong(length.trim()) > limit) {
        rc.response().putHeader("connection", "close");
        ctx.metrics().offered();
        EdgeRefusal.refuse(ctx, rc, EdgeError.tooLarge(limit), "invalid");
        return;
      }
    } catch (NumberFormatException e) {
      ctx.metrics().offered();
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("content-length: expected a number", null), "invalid");
      return;
    }
    rc.next();
  }

  private void failure(RoutingContext rc) {
    int status = rc.statusCode();
    if (status == 413) {
      rc.response().putHeader("connection", "close");
      ctx.metrics().offered();
      EdgeRefusal.refuse(ctx, rc, EdgeError.tooLarge(config.get().serving().maxRequestBytes()), "invalid");
      return;
    }
    EdgeError error = status == 403 ? EdgeError.corsRejected()
        : status == 417 ? EdgeError.expectationFailed(rc.request().getHeader("expect"))
        : status == 404 || status == 405 ? new EdgeError(status, "invalid_request_error", "no route for " + rc.request().path(), null, null, "not_found", false)
        : status >= 400 && status < 500 ? EdgeError.invalid("malformed request", null)
        : new EdgeError(500, "internal_error", "internal router error", null, null, "internal", false);
    error.send(rc.response());
  }

  /** The union of what serving engines list in their own {@code /v1/models} (placement learns it), as vLLM answers. */
  private void models(RoutingContext rc) {
    ctx.controlBus().models().onComplete(ar -> rc.json(new JsonObject().put("object", "list")
        .put("data", ar.succeeded() ? ar.result() : new JsonArray())));
  }

  private void metrics(RoutingContext rc) {
    String text = shared.registry() instanceof PrometheusMeterRegistry prometheus ? prometheus.scrape() : "";
    rc.response().putHeader("content-type", "text/plain; version=0.0.4; charset=utf-8").end(text);
  }

  private void state(RoutingContext rc) {
    Future<JsonObject> placement = ctx.controlBus().state();
    Future<JsonObject> breaker = ctx.controlBus().breakerState();
    Future.join(placement, breaker).onComplete(ar -> {
      JsonObject p = placement.succeeded() ? placement.result() : new JsonObject();
      JsonObject b = breaker.succeeded() ? breaker.result() : new JsonObject();
      JsonArray engines = p.getJsonArray("engines", new JsonArray());
      for (Object o : engines) {
        JsonObject engine = (JsonObject) o;
        b.getJsonArray("engines", new JsonArray()).stream().map(JsonObject.class::cast)
            .filter(e -> engine.getString("iid").equals(e.getString("iid"))).findFirst()
            .ifPresent(e -> engine.put("cause", e.getString("cause")).put("streaks", e.getJsonObject("streaks"))
                .put("last_probe", e.getString("last_probe")).put("next_probe_ms", e.getValue("next_probe_ms"))
                .put("backoff", e.getValue("backoff")).put("quarantine_until_ms", e.getValue("quarantine_until_ms")));
      }
      JsonObject models = p.getJsonObject("models");
      if (models != null) {
        models.fieldNames().forEach(m -> models.getJsonObject(m)
            .put("max_model_len", shared.facts().smallestContext(BaseModels.enginesOf(config.get(), m))));
      }
      rc.json(new JsonObject().put("model", config.get().model()).put("models", models).put("engines", engines)
          .put("ready", p.getBoolean("ready", false) && !shared.admission().draining()
              && narwhal.common.bus.ClusterView.of(vertx).refusal() == null)
          .put("draining", shared.admission().draining()).put("in_flight", shared.admission().inFlight()).put("fleet_hold", b.getBoolean("fleet_hold", false))
          .put("shared_state", b.getString("shared_state", "closed"))
          .put("placement", p.getJsonObject("placement"))
          .put("restart_pending", new JsonArray(List.copyOf(shared.restartPending().get())))
          .put("reservations", p.getInteger("reservations", 0)).put("retry_credits", shared.retryBudget().credits())
          .put("handoffs_left", shared.metrics().handoffsLeft())
          .put("cluster_members", new JsonArray(List.copyOf(shared.members().get())))
          .put("cluster", narwhal.common.bus.ClusterView.of(vertx).toJson()));
    });
  }

  /** {@code /v1/*} with client keys configured: {@code Authorization: Bearer <key>}, else 401, journaled as rejected. */
  private void clientKey(RoutingContext rc) {
    String authorization = rc.request().getHeader("authorization");
    if (shared.access().get().clients().admits(authorization)) {
      rc.next();
      return;
    }
    rc.response().putHeader("www-authenticate", "Bearer");
    if (rc.request().method() != HttpMethod.GET) rc.response().putHeader("connection", "close");
    ctx.metrics().offered();
    EdgeRefusal.refuse(ctx, rc, EdgeError.invalidApiKey(authorization != null), "rejected");
  }

  /** {@code /metrics} and {@code /narwhal/state} with an ops token configured: {@code Authorization: Bearer <token>}. */
  private void opsToken(RoutingContext rc) {
    if (shared.access().get().ops().admits(rc.request().getHeader("authorization"))) {
      rc.next();
      return;
    }
    rc.response().putHeader("www-authenticate", "Bearer");
    new EdgeError(401, "invalid_api_key", "this endpoint needs Authorization: Bearer <ops token> (server.ops_token_env)",
        null, "invalid_api_key", "invalid_api_key", false).send(rc.response());
  }
}
