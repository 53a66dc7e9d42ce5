package narwhal.router.telemetry;

import narwhal.common.config.ConfigException;
import narwhal.common.config.TelemetryConfig;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Where spans go, from {@code telemetry.otlp_endpoint} or else the standard OpenTelemetry variables: the traces URL
 * ({@code <base>/v1/traces}; {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} is used as it is) and the headers
 * ({@code OTEL_EXPORTER_OTLP_HEADERS}, then {@code OTEL_EXPORTER_OTLP_TRACES_HEADERS}, as {@code key=value,...}).
 * Null from {@link #resolve} when nothing names an endpoint, or {@code OTEL_SDK_DISABLED} is {@code true}: tracing is off;
 * a variable that is not an http(s) URL is refused with a {@link ConfigException}.
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
      url = checked("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env);
    } else if (!trimmed(env.apply("OTEL_EXPORTER_OTLP_ENDPOINT")).isEmpty()) {
      url = base(checked("OTEL_EXPORTER_OTLP_ENDPOINT", env)) + TRACES_PATH;
    } else {
      return null;
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.putAll(headers(env.apply("OTEL_EXPORTER_OTLP_HEADERS")));
    headers.putAll(headers(env.apply("OTEL_EXPORTER_OTLP_TRACES_HEADERS")));
    return new TraceExport(url, headers, cfg.sampleRatio(), cfg.serviceName());
  }

  /** The variable's URL, refused (naming it, its value and what is expected) unless it is an http(s) URL. */
  private static String checked(String variable, UnaryOperator<String> env) {
    String url = trimmed(env.apply(variable));
    if (!TelemetryConfig.validEndpoint(url)) {
      throw new ConfigException(variable, variable + ": " + io.vertx.core.json.Json.encode(url)
          + " is not valid: expected an http:// or https:// URL such as http://collector:4318");
    }
    return url;
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
