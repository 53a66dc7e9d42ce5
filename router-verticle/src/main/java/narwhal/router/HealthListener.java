package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;

/**
 * {@code server.health_port}: {@code /health} and {@code /ready} on a port of their own, served by a Vert.x
 * instance of its own with one event loop that does nothing else, and the {@link AdminEndpoint}. A replica relaying a thousand streams keeps
 * its event loops' queues full; a check waiting in one of them answered in seconds and a balancer took a
 * serving replica out. This loop is idle between checks, so the kernel schedules it as soon as a check
 * arrives, whatever the router's loops are doing (docs/operations.md#readiness).
 */
final class HealthListener {
  private final Vertx own;
  private final HttpServer server;

  private HealthListener(Vertx own, HttpServer server) {
    this.own = own;
    this.server = server;
  }

  /** Listens on {@code host:port} (0: any free port); fails if the port is taken. */
  static Future<HealthListener> start(String host, int port, ReadinessAnswer answer, AdminEndpoint admin) {
    return ownVertx().compose(own -> own.createHttpServer(new HttpServerOptions().setHost(host).setPort(port).setTcpNoDelay(true))
        .requestHandler(request -> answer(request, answer, admin)).listen()
        .map(server -> new HealthListener(own, server))
        .recover(err -> {
          // not chained: a continuation of own.close() would be dispatched to the loop that close ends, and never run
          own.close();
          return Future.failedFuture(
              new IllegalStateException("server.health_port " + port + ": cannot listen on " + host + ": " + err.getMessage(), err));
        }));
  }

  /**
   * The listener's own Vert.x instance, made on a thread of its own: made on the replica's event loop, Vert.x would
   * warn at every start that a Vert.x instance is created from inside another's context, and the loop would wait
   * for the new instance's threads.
   */
  private static Future<Vertx> ownVertx() {
    io.vertx.core.Promise<Vertx> made = io.vertx.core.Promise.promise();
    Thread maker = new Thread(() -> {
      try {
        made.complete(Vertx.builder().with(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1)
            .setInternalBlockingPoolSize(1)).build());
      } catch (Throwable e) {
        made.fail(e);
      }
    }, "narwhal-health-listener-start");
    maker.setDaemon(true);
    maker.start();
    return made.future();
  }

  private static void answer(HttpServerRequest request, ReadinessAnswer answer, AdminEndpoint admin) {
    String path = request.path();
    if (path.equals(AdminEndpoint.PATH)) {
      admin.handle(request);
    } else if (!path.equals("/ready") && !path.equals("/health")) {
      request.response().setStatusCode(404).end();
    } else if (request.method() != HttpMethod.GET) {
      request.response().setStatusCode(405).putHeader("allow", "GET").end();
    } else if (path.equals("/ready")) {
      String models = request.getParam("models");
      if (!ReadinessAnswer.refusedScope(models, request.response())) answer.ready(request.response(), models != null);
    } else {
      ReadinessAnswer.health(request.response());
    }
  }

  int actualPort() {
    return server.actualPort();
  }

  /**
   * Stops listening; completes on {@code caller} (the listener's own loop is shut down right after, and a callback
   * left to it would never run).
   */
  Future<Void> close(io.vertx.core.Context caller) {
    io.vertx.core.Promise<Void> closed = io.vertx.core.Promise.promise();
    server.close().onComplete(ar -> {
      own.close();
      caller.runOnContext(v -> closed.complete());
    });
    return closed.future();
  }
}
