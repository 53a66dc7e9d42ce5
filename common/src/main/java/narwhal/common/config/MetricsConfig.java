package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.Set;

/**
 * Ours: what {@code /metrics} carries besides Narwhal's own series. {@code vertx_http} (default true) keeps Vert.x's
 * HTTP server and client meters ({@code vertx_http_server_*}, {@code vertx_http_client_*}); false leaves them out and
 * saves what they cost per request (a meter looked up and recorded per request, response and connection: about 6 %
 * of a short request's router CPU in {@code bench overhead}). Read at start.
 */
public record MetricsConfig(boolean vertxHttp) {

  static final Set<String> KEYS = Set.of("vertx_http");

  public static MetricsConfig defaults() {
    return new MetricsConfig(true);
  }

  static MetricsConfig read(SectionReader r) {
    return new MetricsConfig(r.bool("vertx_http", defaults().vertxHttp()));
  }

  public JsonObject toJson() {
    return new JsonObject().put("vertx_http", vertxHttp);
  }
}
