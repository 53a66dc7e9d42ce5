package narwhal.router;

import io.vertx.ext.web.RoutingContext;

import java.util.UUID;

/**
 * The routing-context keys of a request at the edge, and the first handler of every route, which sets them: each
 * request gets the router's own id ({@code x-request-id} answers with the client's when it sent one) and its arrival.
 */
final class RequestKeys {
  /** The router's id of the request, in its journal row and its engine legs. */
  static final String RID = "narwhal.rid";
  /** The timer bounding how long the body may take to arrive ({@link ReceiveGuard}). */
  static final String RECEIVE_TIMER = "narwhal.receive.timer";

  private RequestKeys() {
  }

  /** Gives the request its id and arrival, and answers with an {@code x-request-id}. */
  static void begin(RoutingContext rc) {
    String rid = UUID.randomUUID().toString();
    rc.put(RID, rid);
    EdgeRefusal.arrived(rc);
    String own = rc.request().getHeader("x-request-id");
    rc.response().putHeader("x-request-id", own != null && !own.isEmpty() ? own : rid);
    rc.next();
  }
}
