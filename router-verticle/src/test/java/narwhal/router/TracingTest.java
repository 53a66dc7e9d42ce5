package narwhal.router;

import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.proto.trace.v1.Status;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Tracing on (docs/operations.md#tracing): a real OTLP/HTTP receiver decodes the protobuf exports of a router over
 * real simulated engines; the span tree, its parent links across a client's {@code traceparent}, the attributes, and
 * the {@code traceparent} each engine leg received are checked against each other and the journal.
 */
@Timeout(120)
class TracingTest {
  static final String CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String CLIENT_SPAN = "00f067aa0ba902b7";
  static Vertx receiverVertx;
  static OtlpReceiver otlp;
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    receiverVertx = Vertx.vertx();
    otlp = OtlpReceiver.start(receiverVertx);
    h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json
            .put("telemetry", new JsonObject().put("otlp_endpoint", otlp.url()).put("service_name", "narwhal-test"))
            .put("serving", new JsonObject().put("max_attempts", 2))
            .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)),
        (iid, o) -> { }, Map.of("OTEL_BSP_SCHEDULE_DELAY", "20"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
    otlp.close();
    receiverVertx.close().toCompletionStage().toCompletableFuture().join();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  static JsonObject chat() {
    return new JsonObject().put("model", RouterHarness.MODEL).put("stream", true).put("max_tokens", 5)
        .put("messages", new io.vertx.core.json.JsonArray().add(new JsonObject().put("role", "user").put("content", "hello narwhal")));
  }

  static boolean hasRequestSpan(List<OtlpReceiver.Received> spans) {
    return spans.stream().anyMatch(s -> s.span().getKind() == Span.SpanKind.SPAN_KIND_SERVER);
  }

  static OtlpReceiver.Received one(List<OtlpReceiver.Received> spans, String name) {
    List<OtlpReceiver.Received> named = spans.stream().filter(s -> s.name().equals(name)).toList();
    assertEquals(1, named.size(), name + " in " + OtlpReceiver.names(spans));
    return named.get(0);
  }

  /** The engine log entry of the backend request {@code requestId}, on whichever engine got it. */
  static JsonObject engineEntry(String requestId) {
    for (SimEngine engine : h.engines.values()) {
      for (JsonObject entry : engine.requests()) if (requestId.equals(entry.getString("request_id"))) return entry;
    }
    throw new AssertionError("no engine received " + requestId);
  }

  @Test
  void aClientsTraceIsContinuedThroughEveryStepAndBothEngineLegs() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat().toBuffer(),
        Map.of("traceparent", "00-" + CLIENT_TRACE + "-" + CLIENT_SPAN + "-01", "tracestate", "vendor=abc"));
    assertEquals(200, reply.status(), reply.body());
    String rid = reply.requestId();
    List<OtlpReceiver.Received> spans = otlp.trace(CLIENT_TRACE, TracingTest::hasRequestSpan);
    JsonObject row = h.journalRow(rid);

    OtlpReceiver.Received request = one(spans, "chat " + RouterHarness.MODEL);
    assertEquals(Span.SpanKind.SPAN_KIND_SERVER, request.span().getKind());
    assertEquals(CLIENT_SPAN, request.parentId(), "the request span is the client span's child");
    assertEquals("vendor=abc", request.span().getTraceState());
    assertEquals("narwhal-test", request.resource().get("service.name"));
    assertEquals("chat", request.attribute("gen_ai.operation.name"));
    assertEquals(RouterHarness.MODEL, request.attribute("gen_ai.request.model"));
    assertEquals(5L, request.attribute("gen_ai.request.max_tokens"));
    assertEquals(rid, request.attribute("narwhal.rid"));
    assertEquals("default", request.attribute("narwhal.tenant"), "no tenants: the request is the tenant default");
    assertEquals("normal", request.attribute("narwhal.class"));
    assertEquals(200L, request.attribute("http.response.status_code"));
    assertEquals("completed", request.attribute("narwhal.terminal"));
    assertEquals(1L, request.attribute("narwhal.attempts"));
    assertNotNull(row.getInteger("prompt_tokens"), row.encode());
    assertEquals((long) row.getInteger("prompt_tokens"), request.attribute("gen_ai.usage.input_tokens"));
    assertEquals((long) row.getInteger("completion_tokens"), request.attribute("gen_ai.usage.output_tokens"));
    assertEquals(5, row.getInteger("completion_tokens"));
    assertEquals(List.of("length"), request.attribute("gen_ai.response.finish_reasons"));
    assertEquals(CLIENT_TRACE, row.getString("trace_id"), "the journal row carries the trace id");

    OtlpReceiver.Received attempt = one(spans, "narwhal.attempt");
    assertEquals(request.spanId(), attempt.parentId());
    assertEquals(1L, attempt.attribute("narwhal.attempt"));
    assertEquals(row.getString("prefill_iid"), attempt.attribute("narwhal.prefill.engine"));
    assertEquals("D0", attempt.attribute("narwhal.decode.engine"));

    Set<String> underAttempt = spans.stream().filter(s -> s.parentId().equals(attempt.spanId())).map(OtlpReceiver.Received::name)
        .collect(Collectors.toCollection(TreeSet::new));
    assertEquals(new TreeSet<>(List.of("narwhal.placement", "narwhal.prefill", "narwhal.descriptor_validation",
        "narwhal.decode", "narwhal.relay")), underAttempt);
    assertEquals(8, spans.size(), "request, attempt, two placements, prefill, validation, decode, relay: "
        + OtlpReceiver.names(spans));
    assertEquals(Set.of("prefill", "decode"), spans.stream().filter(s -> s.name().equals("narwhal.placement"))
        .map(s -> (String) s.attribute("narwhal.phase")).collect(Collectors.toSet()));

    OtlpReceiver.Received prefill = one(spans, "narwhal.prefill");
    OtlpReceiver.Received decode = one(spans, "narwhal.decode");
    assertEquals(Span.SpanKind.SPAN_KIND_CLIENT, prefill.span().getKind());
    assertEquals(Span.SpanKind.SPAN_KIND_CLIENT, decode.span().getKind());
    assertEquals(row.getString("prefill_iid"), prefill.attribute("narwhal.engine"));
    assertEquals(rid + "-a1-prefill", prefill.attribute("narwhal.engine.request_id"));
    assertEquals("D0", decode.attribute("narwhal.engine"));
    assertEquals(List.of("first_token"), decode.span().getEventsList().stream().map(Span.Event::getName).toList());
    assertEquals(List.of("length"), decode.attribute("gen_ai.response.finish_reasons"));
    assertTrue((Double) decode.attribute("narwhal.handoff.age_s") >= 0);
    OtlpReceiver.Received relay = one(spans, "narwhal.relay");
    assertEquals(decode.span().getEvents(0).getTimeUnixNano(), relay.span().getStartTimeUnixNano(),
        "the relay starts with the first token");
    assertEquals((long) row.getInteger("output_len"), relay.attribute("narwhal.output_chars"));

    assertEquals("00-" + CLIENT_TRACE + "-" + prefill.spanId() + "-01", engineEntry(rid + "-a1-prefill").getString("traceparent"),
        "the producer's own spans join the trace under the prefill leg");
    assertEquals("00-" + CLIENT_TRACE + "-" + decode.spanId() + "-01", engineEntry(rid + "-a1-decode").getString("traceparent"),
        "the consumer's own spans join the trace under the decode leg");
  }

  @Test
  void aHugeModelNameIsCutInTheSpanNameAndItsAttributes() throws Exception {
    String huge = "m".repeat(200_000);
    String trace = "5bf92f3577b34da6a3ce929d0e0e4736";
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat().put("model", huge).toBuffer(),
        Map.of("traceparent", "00-" + trace + "-" + CLIENT_SPAN + "-01"));
    assertEquals(404, reply.status(), reply.requestId());
    OtlpReceiver.Received request = otlp.trace(trace, TracingTest::hasRequestSpan).stream()
        .filter(s -> s.span().getKind() == Span.SpanKind.SPAN_KIND_SERVER).findFirst().orElseThrow();
    assertTrue(request.name().startsWith("chat mmm") && request.name().length() <= "chat ".length() + 257,
        "a client's model name is cut in the span name: " + request.name().length() + " chars");
    String model = (String) request.attribute("gen_ai.request.model");
    assertTrue(model.startsWith("mmm") && model.length() <= 1024, "and in its attributes: " + model.length() + " chars");
  }

  @Test
  void withoutTraceparentATraceStartsHereAndAnUnsampledClientTraceIsNotRecorded() throws Exception {
    String unsampledTrace = "0af7651916cd43dd8448eb211c80319c";
    RouterHarness.Reply unsampled = h.post("/v1/chat/completions", chat().toBuffer(),
        Map.of("traceparent", "00-" + unsampledTrace + "-b7ad6b7169203331-00"));
    assertEquals(200, unsampled.status(), unsampled.body());
    String decodeParent = engineEntry(unsampled.requestId() + "-a1-decode").getString("traceparent");
    assertTrue(decodeParent.startsWith("00-" + unsampledTrace + "-") && decodeParent.endsWith("-00"),
        "the engines still get the (unsampled) trace: " + decodeParent);
    assertEquals(unsampledTrace, h.journalRow(unsampled.requestId()).getString("trace_id"));

    RouterHarness.Reply fresh = h.post("/v1/chat/completions", chat().toBuffer(), Map.of());
    assertEquals(200, fresh.status(), fresh.body());
    String traceId = h.journalRow(fresh.requestId()).getString("trace_id");
    assertNotNull(traceId);
    List<OtlpReceiver.Received> spans = otlp.trace(traceId, TracingTest::hasRequestSpan);
    OtlpReceiver.Received request = one(spans, "chat " + RouterHarness.MODEL);
    assertEquals("", request.parentId(), "a root span");
    assertTrue(engineEntry(fresh.requestId() + "-a1-prefill").getString("traceparent").startsWith("00-" + traceId + "-"));

    // spans are exported in the order they end: the unsampled request ended before the fresh one's spans arrived
    assertFalse(otlp.all().stream().anyMatch(s -> s.traceId().equals(unsampledTrace)), "an unsampled trace is not exported");
  }

  @Test
  void aFailedAttemptCarriesItsFaultAndTheRetryIsItsSibling() throws Exception {
    h.engine("P0").faults().add(new JsonObject().put("kind", "status").put("status", 503).put("phase", "prefill").put("count", 1));
    RouterHarness.Reply reply = null;
    for (int i = 0; i < 8 && !h.engine("P0").faults().list().isEmpty(); i++) {
      reply = h.post("/v1/chat/completions", chat().toBuffer(), Map.of());
    }
    assertTrue(h.engine("P0").faults().list().isEmpty(), "P0 was placed on within 8 requests");
    assertEquals(200, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals(2, row.getInteger("attempts"), row.encode());
    List<OtlpReceiver.Received> spans = otlp.trace(row.getString("trace_id"), TracingTest::hasRequestSpan);

    OtlpReceiver.Received request = one(spans, "chat " + RouterHarness.MODEL);
    assertEquals(2L, request.attribute("narwhal.attempts"));
    List<OtlpReceiver.Received> attempts = spans.stream().filter(s -> s.name().equals("narwhal.attempt"))
        .sorted(java.util.Comparator.comparing(s -> (Long) s.attribute("narwhal.attempt"))).toList();
    assertEquals(2, attempts.size(), OtlpReceiver.names(spans).toString());
    attempts.forEach(a -> assertEquals(request.spanId(), a.parentId()));
    OtlpReceiver.Received failed = attempts.get(0);
    assertEquals("engine_overloaded", failed.attribute("narwhal.fault.kind"));
    assertEquals("prefill", failed.attribute("narwhal.fault.phase"));
    assertEquals("allowed", failed.attribute("narwhal.retry_reason"));
    assertEquals("P0", failed.attribute("narwhal.prefill.engine"));
    assertEquals(Status.StatusCode.STATUS_CODE_ERROR, failed.span().getStatus().getCode());
    OtlpReceiver.Received failedLeg = spans.stream().filter(s -> s.name().equals("narwhal.prefill")
        && s.parentId().equals(failed.spanId())).findFirst().orElseThrow();
    assertEquals("engine_overloaded", failedLeg.attribute("error.type"));
    assertEquals(Status.StatusCode.STATUS_CODE_ERROR, failedLeg.span().getStatus().getCode());
    OtlpReceiver.Received retry = attempts.get(1);
    assertEquals("P1", retry.attribute("narwhal.prefill.engine"));
    assertEquals(Status.StatusCode.STATUS_CODE_UNSET, retry.span().getStatus().getCode());
    assertTrue(spans.stream().anyMatch(s -> s.name().equals("narwhal.decode") && s.parentId().equals(retry.spanId())));
  }

  @Test
  void aRequestRefusedForItsBodyHasItsTraceAndItsRowFindsIt() throws Exception {
    String trace = "6cf92f3577b34da6a3ce929d0e0e4738";
    RouterHarness.Reply reply = h.post("/v1/chat/completions", io.vertx.core.buffer.Buffer.buffer("{\"model\": \"x\", "),
        Map.of("traceparent", "00-" + trace + "-" + CLIENT_SPAN + "-01"));
    assertEquals(400, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("invalid", row.getString("terminal"), row.encode());
    assertEquals(trace, row.getString("trace_id"), "the row names the client's trace");
    OtlpReceiver.Received request = one(otlp.trace(trace, TracingTest::hasRequestSpan), "chat");
    assertEquals(CLIENT_SPAN, request.parentId());
    assertEquals(reply.requestId(), request.attribute("narwhal.rid"));
    assertEquals(400L, request.attribute("http.response.status_code"));
    assertEquals("invalid", request.attribute("narwhal.terminal"));
    assertEquals(0L, request.attribute("narwhal.attempts"));
  }

  @Test
  void aRequestAnEngineRunsWholeIsTracedWithItsOneLegAsTheDecodeSpan() throws Exception {
    String trace = "5cf92f3577b34da6a3ce929d0e0e4737";
    RouterHarness.Reply reply = h.post("/v1/embeddings", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "the narwhal").toBuffer(), Map.of("traceparent", "00-" + trace + "-" + CLIENT_SPAN + "-01"));
    assertEquals(200, reply.status(), reply.body());
    String rid = reply.requestId();
    List<OtlpReceiver.Received> spans = otlp.trace(trace, TracingTest::hasRequestSpan);
    JsonObject row = h.journalRow(rid);
    assertEquals(trace, row.getString("trace_id"), "the journal row carries the trace id");

    OtlpReceiver.Received request = one(spans, "embeddings " + RouterHarness.MODEL);
    assertEquals(Span.SpanKind.SPAN_KIND_SERVER, request.span().getKind());
    assertEquals(CLIENT_SPAN, request.parentId());
    assertEquals("embeddings", request.attribute("gen_ai.operation.name"));
    assertEquals("/v1/embeddings", request.attribute("url.path"));
    assertEquals(200L, request.attribute("http.response.status_code"));
    assertEquals("completed", request.attribute("narwhal.terminal"));
    assertEquals(1L, request.attribute("narwhal.attempts"));
    assertEquals((long) row.getInteger("prompt_tokens"), request.attribute("gen_ai.usage.input_tokens"));

    OtlpReceiver.Received attempt = one(spans, "narwhal.attempt");
    assertEquals(request.spanId(), attempt.parentId());
    assertEquals("D0", attempt.attribute("narwhal.decode.engine"));
    Set<String> underAttempt = spans.stream().filter(s -> s.parentId().equals(attempt.spanId())).map(OtlpReceiver.Received::name)
        .collect(Collectors.toCollection(TreeSet::new));
    assertEquals(new TreeSet<>(List.of("narwhal.placement", "narwhal.decode", "narwhal.relay")), underAttempt);
    assertEquals(5, spans.size(), "request, attempt, one placement, the leg, relay: " + OtlpReceiver.names(spans));
    assertEquals("decode", one(spans, "narwhal.placement").attribute("narwhal.phase"));
    OtlpReceiver.Received leg = one(spans, "narwhal.decode");
    assertEquals(Span.SpanKind.SPAN_KIND_CLIENT, leg.span().getKind());
    assertEquals("D0", leg.attribute("narwhal.engine"));
    assertEquals(rid + "-a1-whole", leg.attribute("narwhal.engine.request_id"));
    assertEquals("00-" + trace + "-" + leg.spanId() + "-01", engineEntry(rid + "-a1-whole").getString("traceparent"),
        "the engine's own spans join the trace under the leg's span");
  }

  static double tokens(String kind) {
    return h.registry.get("narwhal.tokens").tag("model", RouterHarness.MODEL).tag("kind", kind).counter().count();
  }

  /** A streamed {@code /v1/responses} answer's tokens come from its {@code response.completed} event. */
  @Test
  void aStreamedResponseIsCountedFromItsCompletedEvent() throws Exception {
    double prompt = tokens("prompt");
    double completion = tokens("completion");
    double cached = tokens("cached");
    String trace = "7d0a3f4688c45eb7b4df03a1f1f15849";
    RouterHarness.Reply reply = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
            .put("input", "the arctic narwhal").put("max_output_tokens", 4).put("stream", true).toBuffer(),
        Map.of("traceparent", "00-" + trace + "-" + CLIENT_SPAN + "-01"));
    assertEquals(200, reply.status(), reply.body());
    String completed = reply.body().lines().filter(l -> l.startsWith("data: ") && l.contains("\"type\":\"response.completed\""))
        .findFirst().orElseThrow(() -> new AssertionError(reply.body())).substring("data: ".length());
    JsonObject response = new JsonObject(completed).getJsonObject("response");
    JsonObject usage = response.getJsonObject("usage");
    int input = usage.getInteger("input_tokens");
    assertEquals(4, usage.getInteger("output_tokens"), usage.encode());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals(input, row.getInteger("prompt_tokens"), row.encode());
    assertEquals(4, row.getInteger("completion_tokens"), row.encode());
    assertEquals(usage.getJsonObject("input_tokens_details").getInteger("cached_tokens"), row.getInteger("cached_tokens"), row.encode());
    assertEquals(prompt + input, tokens("prompt"));
    assertEquals(completion + 4, tokens("completion"));
    assertEquals(cached + row.getInteger("cached_tokens"), tokens("cached"));
    OtlpReceiver.Received request = one(otlp.trace(trace, TracingTest::hasRequestSpan), "chat " + RouterHarness.MODEL);
    assertEquals((long) input, request.attribute("gen_ai.usage.input_tokens"));
    assertEquals(4L, request.attribute("gen_ai.usage.output_tokens"));
    assertEquals("POST", request.attribute("http.request.method"));
  }

  @Test
  void aStoredResponseReadIsTracedAsTheGetItIs() throws Exception {
    RouterHarness.Reply answer = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "the arctic narwhal").put("max_output_tokens", 4));
    assertEquals(200, answer.status(), answer.body());
    String readTrace = "7cf92f3577b34da6a3ce929d0e0e4739";
    String id = answer.json().getString("id");
    RouterHarness.Reply read = h.get("/v1/responses/" + id, Map.of("traceparent", "00-" + readTrace + "-" + CLIENT_SPAN + "-01"));
    assertEquals(200, read.status(), read.body());
    assertEquals(id, read.json().getString("id"));
    OtlpReceiver.Received retrieve = one(otlp.trace(readTrace, TracingTest::hasRequestSpan), "retrieve_response " + RouterHarness.MODEL);
    assertEquals("GET", retrieve.attribute("http.request.method"), "the span names the request's own method");
    assertEquals("/v1/responses/" + id, retrieve.attribute("url.path"));
  }

  @Test
  void anInvalidDescriptorFailsTheValidationSpan() throws Exception {
    h.engine("P0").faults().add(new JsonObject().put("kind", "descriptor_missing").put("count", 1));
    h.engine("P1").faults().add(new JsonObject().put("kind", "descriptor_missing").put("count", 1));
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat().toBuffer(), Map.of());
    assertEquals(502, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    List<OtlpReceiver.Received> spans = otlp.trace(row.getString("trace_id"), TracingTest::hasRequestSpan);
    OtlpReceiver.Received validation = one(spans, "narwhal.descriptor_validation");
    assertEquals("invalid_descriptor", validation.attribute("error.type"));
    assertEquals(Status.StatusCode.STATUS_CODE_ERROR, validation.span().getStatus().getCode());
    OtlpReceiver.Received request = one(spans, "chat " + RouterHarness.MODEL);
    assertEquals("failed", request.attribute("narwhal.terminal"));
    assertEquals("invalid_descriptor", request.attribute("narwhal.reason"));
    assertEquals(502L, request.attribute("http.response.status_code"));
    assertEquals(Status.StatusCode.STATUS_CODE_ERROR, request.span().getStatus().getCode());
  }
}
