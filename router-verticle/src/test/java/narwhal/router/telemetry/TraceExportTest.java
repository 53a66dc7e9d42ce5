package narwhal.router.telemetry;

import io.vertx.core.MultiMap;
import narwhal.common.config.TelemetryConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Where spans go: telemetry.otlp_endpoint, else the standard OTEL_EXPORTER_OTLP_* variables; nothing named = off. */
class TraceExportTest {
  private static UnaryOperator<String> env(Map<String, String> vars) {
    return vars::get;
  }

  @Test
  void nothingNamedIsTracingOffWithNoSdkAndTheOffTrace() {
    assertNull(TraceExport.resolve(TelemetryConfig.defaults(), env(Map.of())));
    Tracing off = Tracing.start(null, env(Map.of()));
    assertSame(Tracing.OFF, off);
    assertSame(RequestTrace.OFF, off.begin(MultiMap.caseInsensitiveMultiMap()
        .add("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), null));
  }

  @Test
  void theConfiguredBaseUrlGetsTheTracesPath() {
    TraceExport export = TraceExport.resolve(new TelemetryConfig("http://collector:4318/", 0.5, "edge"),
        env(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4318")));
    assertEquals("http://collector:4318/v1/traces", export.tracesUrl());
    assertEquals(0.5, export.sampleRatio());
    assertEquals("edge", export.serviceName());
  }

  @Test
  void theStandardVariablesNameTheEndpointAndHeaders() {
    TraceExport base = TraceExport.resolve(TelemetryConfig.defaults(), env(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318",
        "OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-team = infra", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=llm")));
    assertEquals("https://otel.example:4318/v1/traces", base.tracesUrl());
    assertEquals(Map.of("api-key", "s=cret", "x-team", "llm"), base.headers());
    TraceExport traces = TraceExport.resolve(TelemetryConfig.defaults(), env(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom/traces")));
    assertEquals("http://b:4318/custom/traces", traces.tracesUrl(), "the traces endpoint is used as it is");
  }

  @Test
  void aVariableThatIsNoUrlIsRefusedNamingIt() {
    narwhal.common.config.ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(narwhal.common.config.ConfigException.class,
        () -> TraceExport.resolve(TelemetryConfig.defaults(), env(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"))));
    assertEquals("OTEL_EXPORTER_OTLP_ENDPOINT: \"collector:4318\" is not valid: expected an http:// or https:// URL such as "
        + "http://collector:4318", e.getMessage());
  }

  @Test
  void otelSdkDisabledTurnsItOff() {
    assertNull(TraceExport.resolve(new TelemetryConfig("http://collector:4318", 1.0, "narwhal"),
        env(Map.of("OTEL_SDK_DISABLED", "true"))));
  }
}
