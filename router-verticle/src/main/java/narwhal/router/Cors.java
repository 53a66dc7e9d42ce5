package narwhal.router;

import io.vertx.core.Handler;
import io.vertx.core.MultiMap;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.CorsHandler;
import narwhal.common.config.CorsConfig;

import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The router's cross-origin policy ({@code server.cors}) as Vert.x Web's {@link CorsHandler}, on every client path as
 * vLLM's middleware is: preflights are answered before authentication (a browser sends no key on them), responses
 * carry {@code Access-Control-Allow-Origin}. {@code "*"} methods are all of them; {@code "*"} headers echo what a
 * preflight asks for. The operator's routes ({@code /metrics}, {@code /narwhal/*}) get no CORS: no browser app has
 * business reading them. An answer that names the caller's origin (a list of origins, or credentials allowed) says
 * {@code Vary: Origin}, so a shared cache does not serve it to another origin. Origins are taken as Starlette (vLLM's
 * middleware) takes them: by default any string, and a listed origin of any scheme ({@code chrome-extension://…}).
 */
final class Cors {
  private static final Set<HttpMethod> ALL_METHODS = Set.of(HttpMethod.GET, HttpMethod.HEAD, HttpMethod.POST, HttpMethod.PUT,
      HttpMethod.DELETE, HttpMethod.PATCH, HttpMethod.OPTIONS);

  private Cors() {
  }

  /**
   * Any string as an {@code Origin}, as Starlette's {@code allow_origins=["*"]} takes it. Vert.x's own {@code "*"}
   * refuses (403) every origin its parser does not know: schemes other than http, https and ftp, hosts with other
   * characters than letters, digits, dots and dashes.
   */
  private static final String ANY_ORIGIN = "(?s).*+";

  /** The policy for client paths; operator paths pass untouched. */
  static Handler<RoutingContext> forClientPaths(CorsConfig cfg) {
    CorsHandler cors = handler(cfg);
    // vLLM's answer to any origin without credentials: "*", not the origin (Starlette's simple_headers)
    boolean star = cfg.anyOrigin() && !cfg.allowCredentials();
    return rc -> {
      String path = rc.normalizedPath();
      if (path.equals("/metrics") || path.equals("/narwhal") || path.startsWith("/narwhal/")) {
        rc.next();
        return;
      }
      if (cfg.anyOrigin() && rc.request().getHeader("origin") == null) {
        // not a cross-origin request: nothing to add (as Vert.x's "*" and Starlette do)
        rc.next();
        return;
      }
      rc.addHeadersEndHandler(v -> {
        MultiMap headers = rc.response().headers();
        String allowed = headers.get("access-control-allow-origin");
        if (allowed == null) return;
        if (star) {
          headers.set("access-control-allow-origin", "*");
          dropVaryOrigin(headers);
          return;
        }
        String vary = headers.get("vary");
        if (!allowed.equals("*") && (vary == null || !vary.toLowerCase(Locale.ROOT).contains("origin"))) {
          headers.add("vary", "Origin");
        }
      });
      cors.handle(rc);
    };
  }

  /** An answer that names no origin does not vary by it (Vert.x adds it for a policy of patterns). */
  private static void dropVaryOrigin(MultiMap headers) {
    String vary = headers.get("vary");
    if (vary == null) return;
    String rest = java.util.Arrays.stream(vary.split(",")).map(String::trim).filter(v -> !v.isEmpty() && !v.equalsIgnoreCase("origin"))
        .collect(java.util.stream.Collectors.joining(", "));
    if (rest.isEmpty()) headers.remove("vary"); else headers.set("vary", rest);
  }

  static CorsHandler handler(CorsConfig cfg) {
    CorsHandler cors = CorsHandler.create().allowCredentials(cfg.allowCredentials());
    if (cfg.anyOrigin()) cors.addOriginWithRegex(ANY_ORIGIN);
    else for (String origin : cfg.allowedOrigins()) addOrigin(cors, origin);
    Set<HttpMethod> methods = new LinkedHashSet<>();
    for (String m : cfg.allowedMethods()) {
      if (m.equals("*")) methods.addAll(ALL_METHODS); else methods.add(HttpMethod.valueOf(m.toUpperCase(Locale.ROOT)));
    }
    cors.allowedMethods(methods);
    if (!cfg.allowedHeaders().contains("*")) cors.allowedHeaders(new LinkedHashSet<>(cfg.allowedHeaders()));
    return cors;
  }

  /**
   * A listed origin: Vert.x's matching (case-insensitive, the default port optional) where its parser takes it, else
   * (a {@code chrome-extension://…}, {@code tauri://localhost} origin, a host with an underscore) the exact string, as
   * Starlette compares origins.
   */
  private static void addOrigin(CorsHandler cors, String origin) {
    try {
      CorsHandler.create().addOrigin(origin);
    } catch (IllegalStateException | IllegalArgumentException | IndexOutOfBoundsException unparsed) {
      cors.addOriginWithRegex(Pattern.quote(origin));
      return;
    }
    cors.addOrigin(origin);
  }
}
