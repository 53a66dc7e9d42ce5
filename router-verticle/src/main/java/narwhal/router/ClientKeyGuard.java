package narwhal.router;

import narwhal.common.config.TenantConfig;
import narwhal.common.fault.RequestOutcome;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The client keys ({@code server.api_key_env}, {@link Access}) in front of the serving endpoints: with keys
 * configured, a request needs {@code Authorization: Bearer <key>}, else 401, journalled as {@code rejected}; an
 * {@code OPTIONS} request is let through, as vLLM lets it (its 405, or CORS's preflight answer). A tenant's key
 * ({@code tenants.<name>.api_key_*}) is a client key too, and names the request's tenant ({@link Tenants}). The keys
 * are read per request, so a reloaded fleet file's keys apply at once.
 */
final class ClientKeyGuard implements Handler<RoutingContext> {
  /** The routing-context key of the request's {@link TenantConfig}. */
  private static final String TENANT = "narwhal.tenant";
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
    Access now = access.get();
    Tenants tenants = now.tenants();
    String key = narwhal.common.auth.BearerKeys.token(authorization);
    String keyTenant = tenants.ofKey(key);
    boolean admitted = keyTenant != null || (now.clients().isOpen() ? !tenants.keyed() : now.clients().matches(key));
    if (admitted) {
      rc.put(TENANT, tenants.of(keyTenant, tenants.header().isEmpty() ? null : rc.request().getHeader(tenants.header())));
      rc.next();
      return;
    }
    rc.response().putHeader("www-authenticate", "Bearer");
    if (rc.request().method() != HttpMethod.GET) rc.response().putHeader("connection", "close");
    ctx.metrics().offered();
    EdgeRefusal.refuse(ctx, rc, EdgeError.invalidApiKey(authorization != null), RequestOutcome.REJECTED);
  }

  /** The tenant the guard found for the request; the fallback tenant's settings when the guard did not run. */
  static TenantConfig tenant(RoutingContext rc) {
    TenantConfig t = rc.get(TENANT);
    return t != null ? t : TenantConfig.fallback(narwhal.common.config.TenantsConfig.FALLBACK);
  }
}
