package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/**
 * What {@code /metrics} carries besides Narwhal's own series. {@code vertx_http} (default true) keeps Vert.x's
 * HTTP server and client meters ({@code vertx_http_server_*}, {@code vertx_http_client_*}); false leaves them out and
 * saves what they cost per request (a meter looked up and recorded per request, response and connection: about 6 %
 * of a short request's router CPU in {@code bench overhead}). Read at start.
 */
public record MetricsConfig(boolean vertxHttp) {

  static final Key<MetricsConfig, Boolean> VERTX_HTTP = Key.bool("vertx_http", MetricsConfig::vertxHttp, true)
      .readAtStart();
  static final Section<MetricsConfig> SECTION = new Section<>(VERTX_HTTP);

  public static MetricsConfig defaults() {
    return read(SectionReader.empty("metrics", SECTION));
  }

  static MetricsConfig read(SectionReader r) {
    return new MetricsConfig(r.get(VERTX_HTTP));
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
