package narwhal.router.telemetry;

import narwhal.common.config.TelemetryConfig;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Where spans go, from {@code telemetry.otlp_endpoint} or else the standard OpenTelemetry variables: the traces URL
 * ({@code <base>/v1/traces}; {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} is used as it is) and the headers
 * ({@code OTEL_EXPORTER_OTLP_HEADERS}, then {@code OTEL_EXPORTER_OTLP_TRACES_HEADERS}, as {@code key=value,...}).
 * Null from {@link #resolve} when nothing names an endpoint, or {@code OTEL_SDK_DISABLED} is {@code true}: tracing is off.
 */
public record TraceExport(String tracesUrl, Map<String, String> headers, double sampleRatio, String serviceName) {

  public static final String TRACES_PATH = "/v1/traces";

  public TraceExport {
    headers = Map.copyOf(headers);
  }

  /** The export this config and environment ask for, or null for tracing off. */
  public static TraceExport resolve(TelemetryConfig cfg, UnaryOperator<String> env) {
    if ("true".equalsIgnoreCase(trimmed(env.apply("OTEL_SDK_DISABLED")))) return null;
    String url;
    if (!cfg.otlpEndpoint().isEmpty()) {
      url = base(cfg.otlpEndpoint()) + TRACES_PATH;
    } else if (!trimmed(env.apply("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")).isEmpty()) {
      url = trimmed(env.apply("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    } else if (!trimmed(env.apply("OTEL_EXPORTER_OTLP_ENDPOINT")).isEmpty()) {
      url = base(trimmed(env.apply("OTEL_EXPORTER_OTLP_ENDPOINT"))) + TRACES_PATH;
    } else {
      return null;
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.putAll(headers(env.apply("OTEL_EXPORTER_OTLP_HEADERS")));
    headers.putAll(headers(env.apply("OTEL_EXPORTER_OTLP_TRACES_HEADERS")));
    return new TraceExport(url, headers, cfg.sampleRatio(), cfg.serviceName());
  }

  private static String base(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  private static String trimmed(String value) {
    return value == null ? "" : value.strip();
  }

  /** {@code key=value,key2=value2}, values URL-decoded as the OpenTelemetry specification says. */
  static Map<String, String> headers(String text) {
    Map<String, String> out = new LinkedHashMap<>();
    if (text == null) return out;
    for (String pair : text.split(",")) {
      int eq = pair.indexOf('=');
      if (eq <= 0) continue;
      out.put(pair.substring(0, eq).strip(),
          java.net.URLDecoder.decode(pair.substring(eq + 1).strip(), java.nio.charset.StandardCharsets.UTF_8));
    }
    return out;
  }
}
