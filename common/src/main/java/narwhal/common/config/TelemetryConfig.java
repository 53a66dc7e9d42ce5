package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * OpenTelemetry tracing (docs/operations.md#tracing): {@code otlp_endpoint} is the OTLP/HTTP base URL spans are
 * exported to ({@code /v1/traces} is appended), {@code ""} leaving tracing off unless an {@code OTEL_EXPORTER_OTLP_*}
 * variable names one; {@code sample_ratio} the share of traces started here that are kept (a client's sampled flag
 * decides for the traces it continues); {@code service_name} the {@code service.name} of the exported spans.
 * Read at start.
 */
public record TelemetryConfig(String otlpEndpoint, double sampleRatio, String serviceName) {

  private static final String ENDPOINT_EXPECTATION = "\"\" (off) or an http:// or https:// URL such as http://collector:4318";
  /** Every trace started here is kept. */
  public static final double DEFAULT_SAMPLE_RATIO = 1.0;
  public static final String DEFAULT_SERVICE_NAME = "narwhal";

  static final Key<TelemetryConfig, String> OTLP_ENDPOINT = Key.text("otlp_endpoint", TelemetryConfig::otlpEndpoint, "",
      TelemetryConfig::validEndpoint, ENDPOINT_EXPECTATION).readAtStart();
  static final Key<TelemetryConfig, Double> SAMPLE_RATIO = Key.number("sample_ratio", TelemetryConfig::sampleRatio,
      DEFAULT_SAMPLE_RATIO, v -> v >= 0 && v <= 1, "a number from 0 to 1").readAtStart();
  static final Key<TelemetryConfig, String> SERVICE_NAME = Key.nonEmpty("service_name", TelemetryConfig::serviceName,
      DEFAULT_SERVICE_NAME).readAtStart();
  static final Section<TelemetryConfig> SECTION = new Section<>(OTLP_ENDPOINT, SAMPLE_RATIO, SERVICE_NAME);

  public static TelemetryConfig defaults() {
    return read(SectionReader.empty("telemetry", SECTION));
  }

  static TelemetryConfig read(SectionReader r) {
    return new TelemetryConfig(r.get(OTLP_ENDPOINT), r.get(SAMPLE_RATIO), r.get(SERVICE_NAME));
  }

  /** "" or an absolute http(s) URL with a host: what the OTLP/HTTP exporter can post to. */
  public static boolean validEndpoint(String text) {
    if (text.isEmpty()) return true;
    try {
      URI uri = new URI(text);
      return ("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) && uri.getHost() != null
          && uri.getQuery() == null && uri.getFragment() == null;
    } catch (URISyntaxException e) {
      return false;
    }
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
