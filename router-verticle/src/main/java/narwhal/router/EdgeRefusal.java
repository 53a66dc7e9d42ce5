package narwhal.router;

import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.RoutingContext;
import narwhal.common.fault.RequestOutcome;
import narwhal.router.telemetry.RequestTrace;

import java.time.Instant;

/**
 * Answers a request refused at the edge (a request head the decoder refused, invalid body, too large, in-flight
 * limit, a stopping replica) and gives it its journal row and metrics, like every other ending: one terminal row per
 * request.
 */
final class EdgeRefusal {
  private EdgeRefusal() {
  }

  /** Notes the arrival of a request on its routing context; the first handler of every route calls it. */
  static void arrived(RoutingContext rc) {
    rc.put(RequestKeys.ARRIVED, Instant.now());
    rc.put(RequestKeys.ARRIVED_NANOS, System.nanoTime());
  }

  /**
   * The replica's {@link Admission} for an inference request, one switch for every endpoint: whether it is admitted;
   * if not, it is answered here ({@code in_flight_limit}; {@code shutting_down} with {@code Connection: close}).
   */
  static boolean admitted(RouterContext ctx, RoutingContext rc) {
    switch (ctx.admission().admit(ctx.config().get().serving().maxInFlight())) {
      case OVERLOADED -> {
        refuse(ctx, rc, EdgeError.overloaded(), RequestOutcome.REJECTED);
        return false;
      }
      case SHUTTING_DOWN -> {
        rc.response().putHeader("connection", "close");
        refuse(ctx, rc, EdgeError.shuttingDown(), RequestOutcome.REJECTED);
        return false;
      }
      default -> {
        return true;
      }
    }
  }

  /** {@code terminal} is {@code INVALID} or {@code REJECTED}. */
  static void refuse(RouterContext ctx, RoutingContext rc, EdgeError error, RequestOutcome terminal) {
    refuse(ctx, rc.request(), rc.request().path(), rc.get(RequestKeys.RID), rc.get(RequestKeys.ARRIVED),
        rc.get(RequestKeys.ARRIVED_NANOS), error, terminal);
  }

  /**
   * The same for a request that never reached the router's routes (a request head the decoder refused);
   * {@code endpoint} is the journal row's, null when no path was read.
   */
  static void refuse(RouterContext ctx, HttpServerRequest request, String endpoint, String rid, Instant arrived,
      long arrivedNanos, EdgeError error, RequestOutcome terminal) {
    if (terminal == RequestOutcome.INVALID) ctx.metrics().invalid(); else ctx.metrics().rejected(error.reason());
    error.send(request.response());
    RequestTrace trace = traced(ctx, request, endpoint, rid, arrivedNanos);
    trace.finished(terminal.wireName(), error.reason(), error.status(), error.type(), 0);
    ctx.journal().append(new JournalRow(rid, request.getHeader("x-request-id"), endpoint, arrived, arrivedNanos)
        .ending(terminal, error.reason(), error.status(), error.type()).traceId(trace.traceId()).done());
  }

  /**
   * With tracing on, a refused request has its trace too (the client's {@code traceparent} continued, or a new one): a
   * request span with the refusal, so the trace id its journal row carries finds its trace. None when no path was read.
   */
  private static RequestTrace traced(RouterContext ctx, HttpServerRequest request, String endpoint, String rid, long arrivedNanos) {
    if (endpoint == null || !ctx.tracing().enabled()) return RequestTrace.OFF;
    String operation = switch (endpoint) {
      case "/v1/completions" -> "text_completion";
      case "/v1/chat/completions" -> "chat";
      default -> WholeHandler.operation(endpoint);
    };
    return ctx.tracing().begin(request.headers(), new RequestTrace.Start(operation, null, rid, request.getHeader("x-request-id"),
        endpoint, false, arrivedNanos, null));
  }
}
