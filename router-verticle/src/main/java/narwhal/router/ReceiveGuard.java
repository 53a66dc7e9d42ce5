package narwhal.router;

import narwhal.common.fault.RequestOutcome;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.RoutingContext;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * How one router instance receives requests (docs/errors.md): a connection's first request head must arrive within
 * {@code serving.receive_timeout_s} and so must each body, else 408 and the connection closes; a body over
 * {@code serving.max_request_bytes} is a 413 (refused from its declared length before any of it is read); a body
 * whose framing broke ({@link FramingGuard}) is refused, never served from what arrived. Each refusal is journalled
 * as {@code invalid}. Every request is stamped as its head arrives (its id, its arrival). A connection past
 * {@code server.max_connections} ({@link ClientConnections}) is closed as it arrives; one with no request in flight for
 * {@code server.idle_timeout_s} after its last answer is closed, by the same timer that bounds the wait for its first
 * request. The state is per connection of this instance's event loop.
 */
final class ReceiveGuard {
  private final RouterContext ctx;
  private final HttpServerOptions serverOptions;
  private final ClientConnections connections;
  /** The connections waiting for a request head: their first, or the next after {@code server.idle_timeout_s}. */
  private final Map<HttpConnection, Long> awaitingRequest = new HashMap<>();
  /** Requests in flight per open connection (more than one when a client pipelines). */
  private final Map<HttpConnection, Integer> inFlight = new HashMap<>();
  private final Set<HttpConnection> brokenBodies = new HashSet<>();

  ReceiveGuard(RouterContext ctx, HttpServerOptions serverOptions, ClientConnections connections) {
    this.ctx = ctx;
    this.serverOptions = serverOptions;
    this.connections = connections;
  }

  /**
   * A new connection: past the cap it is closed at once; otherwise its framing is watched and its first request head
   * has a deadline ({@code serving.receive_timeout_s}).
   */
  void connected(HttpConnection connection) {
    if (!connections.admit(ctx.config().get().server())) {
      connection.close();
      return;
    }
    FramingGuard.install(connection, serverOptions, () -> brokenBodies.add(connection));
    inFlight.put(connection, 0);
    awaitRequest(connection, ctx.config().get().serving().receiveTimeoutMs());
    connection.closeHandler(v -> {
      connections.closed();
      brokenBodies.remove(connection);
      inFlight.remove(connection);
      Long pending = awaitingRequest.remove(connection);
      if (pending != null) ctx.vertx().cancelTimer(pending);
    });
  }

  /** Closes {@code connection} unless a request head arrives within {@code ms} (0: it may wait forever). */
  private void awaitRequest(HttpConnection connection, long ms) {
    if (ms <= 0) return;
    awaitingRequest.put(connection, ctx.vertx().setTimer(ms, t -> {
      if (awaitingRequest.remove(connection) != null) connection.close();
    }));
  }

  /** A request of {@code connection} ended (answered or cut): with none left in flight, its idle time starts. */
  private void requestEnded(HttpConnection connection) {
    Integer running = inFlight.get(connection);
    if (running == null) return;
    inFlight.put(connection, running - 1);
    if (running == 1 && !awaitingRequest.containsKey(connection)) {
      awaitRequest(connection, ctx.config().get().server().idleTimeoutMs());
    }
  }

  /**
   * The first handler of every route: the connection's first-request deadline is met, and the request gets the
   * router's id and its arrival; {@code x-request-id} answers with the client's own id when it sent one, else the router's.
   * A client id past {@link RequestIdBound} is refused here, on every route.
   */
  void headArrived(RoutingContext rc) {
    String rid = UUID.randomUUID().toString();
    rc.put(RequestKeys.RID, rid);
    HttpConnection connection = rc.request().connection();
    Long headerTimer = awaitingRequest.remove(connection);
    if (headerTimer != null) ctx.vertx().cancelTimer(headerTimer);
    Integer running = inFlight.get(connection);
    if (running != null) {
      inFlight.put(connection, running + 1);
      rc.addEndHandler(v -> requestEnded(connection));
    }
    EdgeRefusal.arrived(rc);
    String own = rc.request().getHeader("x-request-id");
    if (own != null && !RequestIdBound.accepts(own)) {
      // neither echoed, journalled nor traced: the router's id answers for it
      rc.request().headers().remove("x-request-id");
      rc.response().putHeader("x-request-id", rid);
      ctx.metrics().offered();
      EdgeRefusal.refuse(ctx, rc, RequestIdBound.refusal(own), RequestOutcome.INVALID);
      return;
    }
    rc.response().putHeader("x-request-id", own != null && !own.isEmpty() ? own : rid);
    rc.next();
  }

  /** Refuses a body whose declared length is over the limit before reading any of it; bounds the time to receive it. */
  void declaredSize(RoutingContext rc) {
    long receiveMs = ctx.config().get().serving().receiveTimeoutMs();
    rc.put(RequestKeys.RECEIVE_TIMER, ctx.vertx().setTimer(receiveMs, t -> {
      if (rc.response().headWritten() || rc.response().closed()) return;
      rc.response().putHeader("connection", "close");
      ctx.metrics().offered();
      EdgeRefusal.refuse(ctx, rc, EdgeError.receiveTimeout(receiveMs), RequestOutcome.INVALID);
      rc.request().connection().close();
    }));
    String length = rc.request().getHeader("content-length");
    long limit = ctx.config().get().serving().maxRequestBytes();
    try {
      if (length != null && Long.parseLong(length.trim()) > limit) {
        tooLarge(rc);
        return;
      }
    } catch (NumberFormatException e) {
      ctx.metrics().offered();
      EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("content-length: expected a number", null), RequestOutcome.INVALID);
      return;
    }
    rc.next();
  }

  /** A body over {@code serving.max_request_bytes}, declared or counted as it arrived: 413, then the connection closes. */
  void tooLarge(RoutingContext rc) {
    rc.response().putHeader("connection", "close");
    ctx.metrics().offered();
    EdgeRefusal.refuse(ctx, rc, EdgeError.tooLarge(ctx.config().get().serving().maxRequestBytes()), RequestOutcome.INVALID);
  }

  /** A body whose framing broke (e.g. a bad chunk size) is refused, never served from what arrived. */
  void framed(RoutingContext rc) {
    if (!brokenBodies.remove(rc.request().connection())) {
      rc.next();
      return;
    }
    received(ctx, rc);
    ctx.metrics().offered();
    EdgeRefusal.refuse(ctx, rc, EdgeError.invalid("malformed HTTP request body framing", null), RequestOutcome.INVALID);
  }

  /** The request's body has arrived: its receive timer (armed by {@link #declaredSize}) stops. */
  static void received(RouterContext ctx, RoutingContext rc) {
    Long timer = rc.get(RequestKeys.RECEIVE_TIMER);
    if (timer != null) ctx.vertx().cancelTimer(timer);
  }
}
