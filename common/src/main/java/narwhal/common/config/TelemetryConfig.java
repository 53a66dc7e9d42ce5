package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Set;

/**
 * OpenTelemetry tracing (docs/operations.md#tracing): {@code otlp_endpoint} is the OTLP/HTTP base URL spans are
 * exported to ({@code /v1/traces} is appended), {@code ""} leaving tracing off unless an {@code OTEL_EXPORTER_OTLP_*}
 * variable names one; {@code sample_ratio} the share of traces started here that are kept (a client's sampled flag
 * decides for the traces it continues); {@code service_name} the {@code service.name} of the exported spans.
 * Read at start.
 */
public record TelemetryConfig(String otlpEndpoint, double sampleRatio, String serviceName) {

  static final Set<String> KEYS = Set.of("otlp_endpoint", "sample_ratio", "service_name");
  private static final String ENDPOINT_EXPECTATION = "\"\" (off) or an http:// or https:// URL such as http://collector:4318";

  public static TelemetryConfig defaults() {
    return new TelemetryConfig("", 1.0, "narwhal");
  }

  static TelemetryConfig read(SectionReader r) {
    TelemetryConfig d = defaults();
    return new TelemetryConfig(
        r.text("otlp_endpoint", d.otlpEndpoint(), TelemetryConfig::validEndpoint, ENDPOINT_EXPECTATION),
        r.number("sample_ratio", d.sampleRatio(), v -> v >= 0 && v <= 1, "a number from 0 to 1"),
        r.nonEmptyString("service_name", d.serviceName()));
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
    return new JsonObject().put("otlp_endpoint", otlpEndpoint).put("sample_ratio", sampleRatio).put("service_name", serviceName);
  }
}
