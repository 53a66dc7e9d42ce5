package narwhal.router;

import com.google.protobuf.ByteString;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * A real OTLP/HTTP trace receiver on port 0: decodes each {@code POST /v1/traces} body as the protobuf
 * {@code ExportTraceServiceRequest} the OpenTelemetry exporter sends and keeps its spans with their resource.
 */
final class OtlpReceiver implements AutoCloseable {
  /** One received span and the attributes of the resource that sent it. */
  record Received(Span span, Map<String, String> resource) {
    String traceId() {
      return hex(span.getTraceId());
    }

    String spanId() {
      return hex(span.getSpanId());
    }

    String parentId() {
      return hex(span.getParentSpanId());
    }

    String name() {
      return span.getName();
    }

    /** The attribute's value: a String, Long, Double, Boolean or List of Strings; null when absent. */
    Object attribute(String key) {
      for (KeyValue kv : span.getAttributesList()) if (kv.getKey().equals(key)) return value(kv.getValue());
      return null;
    }
  }

  private final Vertx vertx;
  private final HttpServer server;
  private final List<Received> sink;
  private final List<String> types;

  private OtlpReceiver(Vertx vertx, HttpServer server, List<Received> sink, List<String> types) {
    this.vertx = vertx;
    this.server = server;
    this.sink = sink;
    this.types = types;
  }

  static OtlpReceiver start(Vertx vertx) {
    List<Received> sink = new CopyOnWriteArrayList<>();
    List<String> types = new CopyOnWriteArrayList<>();
    HttpServer server = vertx.createHttpServer().requestHandler(req -> {
      if (!"/v1/traces".equals(req.path())) {
        req.response().setStatusCode(404).end();
        return;
      }
      types.add(String.valueOf(req.getHeader("content-type")));
      req.body().onSuccess(body -> {
        try {
          ExportTraceServiceRequest export = ExportTraceServiceRequest.parseFrom(body.getBytes());
          for (ResourceSpans rs : export.getResourceSpansList()) {
            Map<String, String> resource = rs.getResource().getAttributesList().stream()
                .collect(Collectors.toMap(KeyValue::getKey, kv -> String.valueOf(value(kv.getValue())), (a, b) -> b));
            for (ScopeSpans ss : rs.getScopeSpansList()) for (Span s : ss.getSpansList()) sink.add(new Received(s, resource));
          }
          req.response().putHeader("content-type", "application/x-protobuf")
              .end(Buffer.buffer(ExportTraceServiceResponse.getDefaultInstance().toByteArray()));
        } catch (Exception e) {
          req.response().setStatusCode(400).end(String.valueOf(e));
        }
      });
    });
    return new OtlpReceiver(vertx, RouterHarness.await(server.listen(0, "127.0.0.1")), sink, types);
  }

  String url() {
    return "http://127.0.0.1:" + server.actualPort();
  }

  /** Every span received so far. */
  List<Received> all() {
    return new ArrayList<>(sink);
  }

  /** The content types of the export requests received so far. */
  List<String> exportContentTypes() {
    return new ArrayList<>(types);
  }

  /** The spans of {@code traceId}, once {@code done} holds for them (waiting up to 20 s for the batches). */
  List<Received> trace(String traceId, Predicate<List<Received>> done) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (true) {
      List<Received> of = sink.stream().filter(r -> r.traceId().equals(traceId)).toList();
      if (done.test(of)) return of;
      if (System.nanoTime() > deadline) throw new AssertionError("trace " + traceId + " incomplete: " + names(of));
      RouterHarness.await(Future.<Void>future(p -> vertx.setTimer(20, t -> p.complete())));
    }
  }

  static List<String> names(List<Received> spans) {
    return spans.stream().map(Received::name).toList();
  }

  static String hex(ByteString bytes) {
    return HexFormat.of().formatHex(bytes.toByteArray());
  }

  private static Object value(AnyValue v) {
    return switch (v.getValueCase()) {
      case STRING_VALUE -> v.getStringValue();
      case INT_VALUE -> v.getIntValue();
      case DOUBLE_VALUE -> v.getDoubleValue();
      case BOOL_VALUE -> v.getBoolValue();
      case ARRAY_VALUE -> v.getArrayValue().getValuesList().stream().map(OtlpReceiver::value).toList();
      default -> null;
    };
  }

  @Override
  public void close() {
    RouterHarness.await(server.close());
  }
}
