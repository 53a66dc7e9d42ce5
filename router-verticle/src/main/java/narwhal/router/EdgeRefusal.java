package narwhal.router;

import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.time.Instant;

/**
 * Answers a request refused at the edge (a request head the decoder refused, invalid body, too large, in-flight
 * limit) and gives it its journal row and metrics, like every other ending: one terminal row per request.
 */
final class EdgeRefusal {
  static final String ARRIVED = "narwhal.arrived";
  static final String ARRIVED_NANOS = "narwhal.arrived.nanos";

  private EdgeRefusal() {
  }

  /** Notes the arrival of a request on its routing context; the first handler of every route calls it. */
  static void arrived(RoutingContext rc) {
    rc.put(ARRIVED, Instant.now());
    rc.put(ARRIVED_NANOS, System.nanoTime());
  }

  /** {@code terminal} is {@code invalid} or {@code rejected}. */
  static void refuse(RouterContext ctx, RoutingContext rc, EdgeError error, String terminal) {
    refuse(ctx, rc.request(), rc.get(RequestKeys.RID), rc.get(ARRIVED), rc.get(ARRIVED_NANOS), error, terminal);
  }

  /** The same for a request that never reached the router's routes (a request head the decoder refused). */
  static void refuse(RouterContext ctx, HttpServerRequest request, String rid, Instant arrived, long arrivedNanos, EdgeError error,
      String terminal) {
    if ("invalid".equals(terminal)) ctx.metrics().invalid(); else ctx.metrics().rejected(error.reason());
    error.send(request.response());
    ctx.journal().append(new JsonObject().put("rid", rid).put("client_rid", request.getHeader("x-request-id"))
        .put("model", (Object) null).put("endpoint", request.path())
        .put("arrived", arrived.toString()).put("terminal", terminal).put("reason", error.reason()).put("status", error.status())
        .put("error_type", error.type()).put("ttft_s", (Object) null).put("first_byte_s", (Object) null)
        .put("prefill_iid", (Object) null).put("decode_iid", (Object) null)
        .put("prefill_placement", (Object) null).put("decode_placement", (Object) null).put("crossed", (Object) null).put("attempts", 0)
        .put("attempt_failures", new JsonArray()).put("output_len", 0)
        .put("duration_s", (System.nanoTime() - arrivedNanos) / 1e9));
  }
}
