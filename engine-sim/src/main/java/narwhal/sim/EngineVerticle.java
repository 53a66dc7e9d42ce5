package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.net.NetServer;
import io.vertx.ext.web.Router;

import java.net.BindException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Runs one simulated engine on its own event loop: the inference HTTP server (which can stop and
 * resume listening on the same port), the KV side-channel server, the HTTP client used for KV
 * pulls, and a periodic sweep of expired handoffs. Start completes when both servers listen.
 */
final class EngineVerticle extends VerticleBase {

  static final long SWEEP_INTERVAL_MS = 500;

  /**
   * Ports held by live simulated engines in this JVM. Vert.x lets servers of one Vertx instance
   * share a port (round-robin), which would silently merge two engines; a claim makes the second
   * engine fail to start instead, as a second vLLM process would.
   */
  private static final Map<String, String> CLAIMED = new ConcurrentHashMap<>();

  private final SimEngine engine;
  private Router inferenceRouter;
  private HttpServer inferenceServer;
  private HttpServer sideChannelServer;
  private HttpClient client;
  private int port;
  private int sideChannelPort;
  private int deadPort;
  private long sweepTimer = -1;
  private final String claimOwner;

  EngineVerticle(SimEngine engine) {
    this.engine = engine;
    this.claimOwner = engine.name() + "#" + UUID.randomUUID();
  }

  @Override
  public Future<?> start() {
    SimEngineOptions options = engine.config();
    client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true), new PoolOptions().setHttp1MaxSize(32));
    engine.attachPuller(new KvPuller(client));
    inferenceRouter = EngineRoutes.router(vertx, engine);
    return unusedPort()
      .compose(dead -> {
        deadPort = dead;
        return claim(options.getSideChannelPort()).compose(v -> claim(options.getPort()));
      })
      .compose(v -> vertx.createHttpServer(serverOptions(options.getSideChannelPort()))
        .requestHandler(SideChannel.router(vertx, engine))
        .listen())
      .compose(side -> {
        sideChannelServer = side;
        sideChannelPort = side.actualPort();
        return claim(sideChannelPort);
      })
      .compose(v -> listenInference(options.getPort()))
      .compose(v -> claim(port))
      .onFailure(err -> releaseClaims())
      .onSuccess(v -> sweepTimer = vertx.setPeriodic(SWEEP_INTERVAL_MS, t -> engine.handoffs().sweep()));
  }

  @Override
  public Future<?> stop() {
    if (sweepTimer >= 0) {
      vertx.cancelTimer(sweepTimer);
    }
    Future<Void> inference = inferenceServer == null ? Future.succeededFuture() : inferenceServer.close();
    Future<Void> side = sideChannelServer == null ? Future.succeededFuture() : sideChannelServer.close();
    return Future.join(inference, side, client.close()).onComplete(ar -> releaseClaims());
  }

  int port() {
    return port;
  }

  int sideChannelPort() {
    return sideChannelPort;
  }

  int deadPort() {
    return deadPort;
  }

  /** Closes the inference server (and its connections): clients now get "connection refused". */
  Future<Void> stopListening() {
    return onContext(() -> {
      HttpServer server = inferenceServer;
      inferenceServer = null;
      return server == null ? Future.succeededFuture() : server.close();
    });
  }

  /** Stops accepting on the inference port and closes each connection once its running requests are done. */
  Future<Void> shutDown(long timeoutMs) {
    return onContext(() -> {
      HttpServer server = inferenceServer;
      inferenceServer = null;
      return server == null ? Future.succeededFuture() : server.shutdown(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
    });
  }

  /** Listens again on the same inference port. */
  Future<Void> resumeListening() {
    return onContext(() -> inferenceServer != null ? Future.succeededFuture() : listenInference(port));
  }

  private Future<Void> listenInference(int wanted) {
    return vertx.createHttpServer(serverOptions(wanted))
      .connectionHandler(connection -> ConnectionFaults.apply(engine, connection))
      .requestHandler(inferenceRouter)
      .listen()
      .map(server -> {
        inferenceServer = server;
        port = server.actualPort();
        return null;
      });
  }

  /** Claims a port for this engine (0 claims nothing); fails if another live engine holds it. */
  private Future<Void> claim(int wanted) {
    if (wanted == 0) {
      return Future.succeededFuture();
    }
    String owner = CLAIMED.putIfAbsent(key(wanted), claimOwner);
    if (owner != null && !owner.equals(claimOwner)) {
      return Future.failedFuture(new BindException("port " + wanted + " is already used by simulated engine " + owner));
    }
    return Future.succeededFuture();
  }

  private void releaseClaims() {
    CLAIMED.values().removeIf(claimOwner::equals);
  }

  private String key(int actual) {
    return engine.config().getHost() + ":" + actual;
  }

  /**
   * HTTP/1.1 only, as vLLM's server speaks: without h2c detection Vert.x reads nothing before the connection
   * handler has run, so a connection fault ({@link ConnectionFaults}) acts before the first byte is read.
   */
  private HttpServerOptions serverOptions(int wanted) {
    return new HttpServerOptions().setHost(engine.config().getHost()).setPort(wanted).setReuseAddress(true)
      .setHttp2ClearTextEnabled(false);
  }

  /** A loopback port nothing listens on, for descriptors that point at a wrong side channel. */
  private Future<Integer> unusedPort() {
    NetServer probe = vertx.createNetServer();
    return probe.connectHandler(socket -> socket.close())
      .listen(0, "127.0.0.1")
      .compose(server -> {
        int unused = server.actualPort();
        return server.close().map(unused);
      });
  }

  private <T> Future<T> onContext(Supplier<Future<T>> action) {
    Promise<T> promise = Promise.promise();
    context.runOnContext(v -> action.get().onComplete(promise));
    return promise.future();
  }
}
