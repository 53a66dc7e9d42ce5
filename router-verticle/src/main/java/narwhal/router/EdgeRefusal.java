package narwhal.router;

import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import narwhal.common.config.TenantConfig;
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
   * The replica's {@link Admission} for an inference request, one switch for every endpoint: the in-flight limit (else
   * {@code in_flight_limit}; a stopping replica's {@code shutting_down} with {@code Connection: close}), then its
   * tenant's quotas ({@link TenantQuotas}: 429 naming the quota, with {@code Retry-After}); the answer carries the
   * tenant's {@code x-ratelimit-*} headers whatever happens next. Returns the lane the request's attempts wait and
   * count in, or null when it was answered here. {@code body}: the parsed body (empty without one); {@code prompts}:
   * how many prompts it batches.
   */
  static Admission.Lane admitted(RouterContext ctx, RoutingContext rc, JsonObject body, int prompts) {
    switch (ctx.admission().admit(ctx.config().get().serving().maxInFlight())) {
      case OVERLOADED -> {
        refuse(ctx, rc, EdgeError.overloaded(), RequestOutcome.REJECTED);
        return null;
      }
      case SHUTTING_DOWN -> {
        rc.response().putHeader("connection", "close");
        refuse(ctx, rc, EdgeError.shuttingDown(), RequestOutcome.REJECTED);
        return null;
      }
      default -> {
      }
    }
    TenantConfig tenant = ClientKeyGuard.tenant(rc);
    TenantQuotas quotas = ctx.admission().quotas();
    TenantQuotas.Verdict verdict = quotas.admit(tenant);
    ctx.metrics().tenantRequest(tenant, verdict.admitted());
    RateLimitHeaders.put(rc.response(), quotas.headroom(tenant));
    Admission.Lane lane = Admission.Lane.of(tenant, rc.body() == null ? 0 : rc.body().length(), prompts, body);
    if (!verdict.admitted()) {
      ctx.admission().finished();
      rc.response().putHeader("retry-after", String.valueOf(verdict.retryAfterS()));
      refuse(ctx, rc, EdgeError.overQuota(tenant, verdict.over()), RequestOutcome.REJECTED, lane);
      return null;
    }
    return lane;
  }

  /** {@code terminal} is {@code INVALID} or {@code REJECTED}. */
  static void refuse(RouterContext ctx, RoutingContext rc, EdgeError error, RequestOutcome terminal) {
    refuse(ctx, rc, error, terminal, null);
  }

  /** The same, for a request whose tenant is known ({@code lane}: its journal row names it). */
  static void refuse(RouterContext ctx, RoutingContext rc, EdgeError error, RequestOutcome terminal, Admission.Lane lane) {
    refuse(ctx, rc.request(), rc.request().path(), rc.get(RequestKeys.RID), rc.get(RequestKeys.ARRIVED),
        rc.get(RequestKeys.ARRIVED_NANOS), error, terminal, lane);
  }

  /**
   * The same for a request that never reached the router's routes (a request head the decoder refused);
   * {@code endpoint} is the journal row's, null when no path was read.
   */
  static void refuse(RouterContext ctx, HttpServerRequest request, String endpoint, String rid, Instant arrived,
      long arrivedNanos, EdgeError error, RequestOutcome terminal) {
    refuse(ctx, request, endpoint, rid, arrived, arrivedNanos, error, terminal, null);
  }

  private static void refuse(RouterContext ctx, HttpServerRequest request, String endpoint, String rid, Instant arrived,
      long arrivedNanos, EdgeError error, RequestOutcome terminal, Admission.Lane lane) {
    if (terminal == RequestOutcome.INVALID) ctx.metrics().invalid(); else ctx.metrics().rejected(error.reason());
    error.send(request.response());
    RequestTrace trace = traced(ctx, request, endpoint, rid, arrivedNanos);
    trace.finished(terminal.wireName(), error.reason(), error.status(), error.type(), 0);
    ctx.journal().append(new JournalRow(rid, request.getHeader("x-request-id"), endpoint, arrived, arrivedNanos).tenant(lane)
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
