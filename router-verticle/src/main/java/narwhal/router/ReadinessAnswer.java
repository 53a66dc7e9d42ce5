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
    ready(response, false);
  }

  /**
   * As {@link #ready(HttpServerResponse)}; with {@code everyModel} ({@code /ready?models=all}), placement's part holds
   * only when every phase of every model has a serving engine: a start gate for a fleet whose engines come up after
   * the router, where the plain answer holds as soon as one model can be served.
   */
  void ready(HttpServerResponse response, boolean everyModel) {
    JsonObject body;
    String refusal = ClusterView.of(routerVertx).refusal();
    if (admission.draining()) {
      body = new JsonObject().put("ready", false).put("reason", DRAINING);
    } else if (refusal != null) {
      body = new JsonObject().put("ready", false).put("reason", refusal);
    } else {
      LocalPlacement placement = LocalPlacement.of(routerVertx);
      Readiness readiness = placement == null ? Readiness.NO_PLACEMENT : placement.readiness();
      String unready = !readiness.ready() ? readiness.reason() : everyModel ? unreadyModels(readiness) : null;
      body = new JsonObject().put("ready", unready == null);
      if (unready != null) body.put("reason", unready);
    }
    response.setStatusCode(body.getBoolean("ready") ? 200 : 503).putHeader("content-type", "application/json")
        .end(body.encode());
  }

  /** The reasons of the models that cannot be served now, joined; null when every model can. */
  private static String unreadyModels(Readiness readiness) {
    JsonObject models = readiness.models();
    java.util.List<String> reasons = models.fieldNames().stream().map(models::getJsonObject)
        .filter(line -> !line.getBoolean("ready", false)).map(line -> line.getString("reason", "not ready")).sorted().toList();
    return reasons.isEmpty() ? null : String.join("; ", reasons);
  }

  /**
   * The {@code models} parameter of {@code /ready}: absent (some model can be served) or {@code all} (every model);
   * anything else is answered 400 naming it and true is returned.
   */
  static boolean refusedScope(String models, HttpServerResponse response) {
    if (models == null || "all".equals(models)) return false;
    response.setStatusCode(400).putHeader("content-type", "application/json").end(new JsonObject()
        .put("ready", false).put("reason", "query parameter models: expected \"all\" or nothing, got \""
            + (models.length() > 64 ? models.substring(0, 64) + "…" : models) + "\"").encode());
    return true;
  }

  /** 200 {@code {"status": "ok"}} while the process serves HTTP. */
  static void health(HttpServerResponse response) {
    response.putHeader("content-type", "application/json").end(HEALTHY);
  }
}
