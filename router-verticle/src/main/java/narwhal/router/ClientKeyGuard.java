package narwhal.router;

import narwhal.common.fault.RequestOutcome;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The client keys ({@code server.api_key_env}, {@link Access}) in front of the serving endpoints: with keys
 * configured, a request needs {@code Authorization: Bearer <key>}, else 401, journalled as {@code rejected}; an
 * {@code OPTIONS} request is let through, as vLLM lets it (its 405, or CORS's preflight answer). The keys
 * are read per request, so a reloaded fleet file's keys apply at once.
 */
final class ClientKeyGuard implements Handler<RoutingContext> {
  private final RouterContext ctx;
  private final AtomicReference<Access> access;

  ClientKeyGuard(RouterContext ctx, AtomicReference<Access> access) {
    this.ctx = ctx;
    this.access = access;
  }

  @Override
  public void handle(RoutingContext rc) {
    if (rc.request().method() == HttpMethod.OPTIONS) {
      // as vLLM's AuthenticationMiddleware: OPTIONS is never asked for a key (a browser's preflight carries none,
      // and no route serves OPTIONS: it gets its 405)
      rc.next();
      return;
    }
    String authorization = rc.request().getHeader("authorization");
    if (access.get().clients().admits(authorization)) {
      rc.next();
      return;
    }
    rc.response().putHeader("www-authenticate", "Bearer");
    if (rc.request().method() != HttpMethod.GET) rc.response().putHeader("connection", "close");
    ctx.metrics().offered();
    EdgeRefusal.refuse(ctx, rc, EdgeError.invalidApiKey(authorization != null), RequestOutcome.REJECTED);
  }
}
