package narwhal.router;

import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The ops token ({@code server.ops_token_env}, {@link Access}) in front of {@code /metrics} and
 * {@code /narwhal/state}: with a token configured, a request needs {@code Authorization: Bearer <token>}, else 401.
 */
final class OpsTokenGuard implements Handler<RoutingContext> {
  private final AtomicReference<Access> access;

  OpsTokenGuard(AtomicReference<Access> access) {
    this.access = access;
  }

  @Override
  public void handle(RoutingContext rc) {
    if (access.get().ops().admits(rc.request().getHeader("authorization"))) {
      rc.next();
      return;
    }
    rc.response().putHeader("www-authenticate", "Bearer");
    new EdgeError(401, "invalid_api_key", "this endpoint needs Authorization: Bearer <ops token> (server.ops_token_env)",
        null, "invalid_api_key", "invalid_api_key", false).send(rc.response());
  }
}
