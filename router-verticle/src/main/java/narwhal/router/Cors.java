package narwhal.router;

import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.handler.CorsHandler;
import narwhal.common.config.CorsConfig;

import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The router's cross-origin policy ({@code server.cors}) as Vert.x Web's {@link CorsHandler}, on every path as
 * vLLM's middleware is: preflights are answered before authentication (a browser sends no key on them), responses
 * carry {@code Access-Control-Allow-Origin}. {@code "*"} methods are all of them; {@code "*"} headers echo what a
 * preflight asks for.
 */
final class Cors {
  private static final Set<HttpMethod> ALL_METHODS = Set.of(HttpMethod.GET, HttpMethod.HEAD, HttpMethod.POST, HttpMethod.PUT,
      HttpMethod.DELETE, HttpMethod.PATCH, HttpMethod.OPTIONS);

  private Cors() {
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
