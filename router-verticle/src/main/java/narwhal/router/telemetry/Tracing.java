package narwhal.router.telemetry;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.SpanLimits;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * The replica's OpenTelemetry tracing (docs/operations.md#tracing): an SDK tracer provider exporting over OTLP/HTTP in
 * batches from its own thread, sampling parent-based (a client's {@code traceparent} decides, else
 * {@code telemetry.sample_ratio}), and the W3C trace-context propagator. {@link #OFF} holds no SDK object and hands
 * out {@link RequestTrace#OFF}: tracing off costs a request nothing but a virtual call per step. Thread-safe.
 */
public final class Tracing {
  private static final Logger LOG = Logger.getLogger(Tracing.class.getName());
  public static final Tracing OFF = new Tracing(null, null, null);
  /** How long a finished span may wait for the batch it is exported with, unless OTEL_BSP_SCHEDULE_DELAY says (ms). */
  static final long DEFAULT_EXPORT_DELAY_MS = 1000;
  /** How long a stopping replica waits for the collector to take its last spans (docs/operations.md#graceful-stop). */
  public static final long STOP_FLUSH_MS = 2000;
  /**
   * Longest attribute value and status description a span keeps, in characters, and the longest model name in a span
   * name: a request's text (its {@code model}, an engine's error message) can be megabytes, and every span waiting in the
   * export queue would hold it.
   */
  static final int MAX_VALUE_CHARS = 1024;
  static final int MAX_NAME_MODEL_CHARS = 256;
  private static final TextMapGetter<MultiMap> HEADERS = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(MultiMap carrier) {
      return carrier.names();
    }

    @Override
    public String get(MultiMap carrier, String key) {
      return carrier == null ? null : carrier.get(key);
    }
  };

  private final SdkTracerProvider provider;
  private final Tracer tracer;
  private final TraceExport export;
  /** Epoch and {@link System#nanoTime()} read together: span times are taken from nanoTime, as the router's are. */
  private final long anchorEpochNanos;
  private final long anchorNanoTime;

  private Tracing(SdkTracerProvider provider, Tracer tracer, TraceExport export) {
    this.provider = provider;
    this.tracer = tracer;
    this.export = export;
    java.time.Instant now = java.time.Instant.now();
    this.anchorNanoTime = System.nanoTime();
    this.anchorEpochNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /** Tracing for {@code export}, or {@link #OFF} when it is null. */
  public static Tracing start(TraceExport export, UnaryOperator<String> env) {
    if (export == null) return OFF;
    var exporter = OtlpHttpSpanExporter.builder().setEndpoint(export.tracesUrl());
    export.headers().forEach(exporter::addHeader);
    Resource resource = Resource.getDefault().merge(Resource.create(
        Attributes.of(AttributeKey.stringKey("service.name"), export.serviceName())));
    SdkTracerProvider provider = SdkTracerProvider.builder().setResource(resource)
        .setSampler(Sampler.parentBased(Sampler.traceIdRatioBased(export.sampleRatio())))
        .setSpanLimits(SpanLimits.builder().setMaxAttributeValueLength(MAX_VALUE_CHARS).build())
        .addSpanProcessor(BatchSpanProcessor.builder(exporter.build())
            .setScheduleDelay(Duration.ofMillis(exportDelayMs(env))).build())
        .build();
    LOG.info(() -> "tracing: exporting spans to " + export.tracesUrl() + " (sample ratio " + export.sampleRatio() + ")");
    return new Tracing(provider, provider.get("narwhal.router"), export);
  }

  private static long exportDelayMs(UnaryOperator<String> env) {
    String text = env.apply("OTEL_BSP_SCHEDULE_DELAY");
    try {
      return text == null || text.isBlank() ? DEFAULT_EXPORT_DELAY_MS : Math.max(1, Long.parseLong(text.strip()));
    } catch (NumberFormatException e) {
      return DEFAULT_EXPORT_DELAY_MS;
    }
  }

  public boolean enabled() {
    return provider != null;
  }

  /** Where spans go, or null when off. */
  public TraceExport export() {
    return export;
  }

  /**
   * The trace of one inference request: continues the W3C {@code traceparent}/{@code tracestate} among
   * {@code headers}, or starts one.
   */
  public RequestTrace begin(MultiMap headers, RequestTrace.Start start) {
    if (provider == null) return RequestTrace.OFF;
    Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(), headers, HEADERS);
    return new RecordingTrace(this, parent, start);
  }

  Tracer tracer() {
    return tracer;
  }

  /** {@code nanoTime} as epoch nanoseconds. */
  long epochNanos(long nanoTime) {
    return anchorEpochNanos + (nanoTime - anchorNanoTime);
  }

  /** {@code text} cut to {@code max} characters (an ellipsis ends a cut one). */
  static String cut(String text, int max) {
    return text == null || text.length() <= max ? text : text.substring(0, max) + "\u2026";
  }

  static TimeUnit unit() {
    return TimeUnit.NANOSECONDS;
  }

  /**
   * Exports what is pending and stops the exporter, off the event loop, for at most {@link #STOP_FLUSH_MS}: a collector
   * that does not answer by then loses those spans (a warning says so) and holds up no graceful stop.
   */
  public Future<Void> close(Vertx vertx) {
    if (provider == null) return Future.succeededFuture();
    return vertx.executeBlocking(() -> {
      if (!provider.shutdown().join(STOP_FLUSH_MS, TimeUnit.MILLISECONDS).isDone()) {
        LOG.warning(() -> "tracing: the collector at " + export.tracesUrl() + " did not take the last spans within "
            + STOP_FLUSH_MS / 1000.0 + " s of the stop: flush abandoned, those spans are dropped");
      }
      return null;
    }, false);
  }
}
