package narwhal.router;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.CorsHandler;
import narwhal.common.config.CorsConfig;

import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The router's cross-origin policy ({@code server.cors}) as Vert.x Web's {@link CorsHandler}, on every client path as
 * vLLM's middleware is: preflights are answered before authentication (a browser sends no key on them), responses
 * carry {@code Access-Control-Allow-Origin}. {@code "*"} methods are all of them; {@code "*"} headers echo what a
 * preflight asks for. The operator's routes ({@code /metrics}, {@code /narwhal/*}) get no CORS: no browser app has
 * business reading them. An answer that names the caller's origin (a list of origins, or credentials allowed) says
 * {@code Vary: Origin}, so a shared cache does not serve it to another origin.
 */
final class Cors {
  private static final Set<HttpMethod> ALL_METHODS = Set.of(HttpMethod.GET, HttpMethod.HEAD, HttpMethod.POST, HttpMethod.PUT,
      HttpMethod.DELETE, HttpMethod.PATCH, HttpMethod.OPTIONS);

  private Cors() {
  }

  /** The policy for client paths; operator paths pass untouched. */
  static Handler<RoutingContext> forClientPaths(CorsConfig cfg) {
    CorsHandler cors = handler(cfg);
    return rc -> {
      String path = rc.normalizedPath();
      if (path.equals("/metrics") || path.equals("/narwhal") || path.startsWith("/narwhal/")) {
        rc.next();
        return;
      }
      rc.addHeadersEndHandler(v -> {
        String allowed = rc.response().headers().get("access-control-allow-origin");
        String vary = rc.response().headers().get("vary");
        if (allowed != null && !allowed.equals("*") && (vary == null || !vary.toLowerCase(Locale.ROOT).contains("origin"))) {
          rc.response().headers().add("vary", "Origin");
        }
      });
      cors.handle(rc);
    };
  }

  static CorsHandler handler(CorsConfig cfg) {
    CorsHandler cors = CorsHandler.create().allowCredentials(cfg.allowCredentials());
    if (!cfg.anyOrigin()) cors.addOrigins(cfg.allowedOrigins());
    Set<HttpMethod> methods = new LinkedHashSet<>();
    for (String m : cfg.allowedMethods()) {
      if (m.equals("*")) methods.addAll(ALL_METHODS); else methods.add(HttpMethod.valueOf(m.toUpperCase(Locale.ROOT)));
    }
    cors.allowedMethods(methods);
    if (!cfg.allowedHeaders().contains("*")) cors.allowedHeaders(new LinkedHashSet<>(cfg.allowedHeaders()));
    return cors;
  }
}
