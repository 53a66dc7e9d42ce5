package narwhal.router;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.bus.Readiness;

/**
 * The answers of {@code /health} and {@code /ready}, on the client port and on {@code server.health_port}, read
 * from state already computed: the replica's draining flag ({@link Admission}) and placement's last
 * {@link Readiness}. No bus round trip and no other verticle sits on their path, so a busy replica answers its
 * balancer's checks as fast as the thread serving them is scheduled.
 */
final class ReadinessAnswer {
  private static final String HEALTHY = new JsonObject().put("status", "ok").encode();
  /** The reason a draining replica gives for not being ready. */
  static final String DRAINING = "draining: this router replica is stopping";

  private final Admission admission;
  private final Vertx routerVertx;

  /** @param routerVertx the replica's Vert.x instance, where placement publishes its table */
  ReadinessAnswer(Admission admission, Vertx routerVertx) {
    this.admission = admission;
    this.routerVertx = routerVertx;
  }

  /**
   * 200 {@code {"ready": true}}, or 503 with the reason: draining first, then members this replica is configured to
   * join refusing it (docs/operations.md#what-the-cluster-remembers), else what placement says.
   */
  void ready(HttpServerResponse response) {
    JsonObject body;
    String refusal = ClusterView.of(routerVertx).refusal();
    if (admission.draining()) {
      body = new JsonObject().put("ready", false).put("reason", DRAINING);
    } else if (refusal != null) {
      body = new JsonObject().put("ready", false).put("reason", refusal);
    } else {
      LocalPlacement placement = LocalPlacement.of(routerVertx);
      Readiness readiness = placement == null ? Readiness.NO_PLACEMENT : placement.readiness();
      body = new JsonObject().put("ready", readiness.ready());
      if (!readiness.ready()) body.put("reason", readiness.reason());
    }
    response.setStatusCode(body.getBoolean("ready") ? 200 : 503).putHeader("content-type", "application/json")
        .end(body.encode());
  }

  /** 200 {@code {"status": "ok"}} while the process serves HTTP. */
  static void health(HttpServerResponse response) {
    response.putHeader("content-type", "application/json").end(HEALTHY);
  }
}
