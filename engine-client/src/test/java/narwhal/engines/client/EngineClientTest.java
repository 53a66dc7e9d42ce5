package narwhal.engines.client;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.engines.connector.HandoffExpectations;
import narwhal.engines.connector.PrefillResult;
import narwhal.engines.sse.FrameUse;
import narwhal.engines.sse.SseEvent;
import narwhal.engines.sse.SseFrame;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The public Java API on its own, against two simulated engines: prefill → PrefillResult → decode stream. */
@Timeout(60)
class EngineClientTest {
  static Vertx vertx;
  static SimEngine producer;
  static SimEngine consumer;
  static EngineClient client;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx();
    producer = await(SimEngine.start(vertx, new SimEngineOptions().setName("P").setRole("prefill")));
    consumer = await(SimEngine.start(vertx, new SimEngineOptions().setName("D").setRole("decode")));
    client = new EngineClient(vertx, EngineClientOptions.defaults());
  }

  @AfterAll
  static void stop() {
    await(vertx.close());
  }

  @BeforeEach
  void clear() {
    producer.faults().clear();
    consumer.faults().clear();
  }

  static JsonObject body() {
    return new JsonObject().put("prompt", "a narwhal walks into a bar").put("max_tokens", 6);
  }

  static PrefillResult prefill() {
    return await(client.prefill(new PrefillCall(producer.url(), "/v1/completions", body(), SimEngineOptions.DEFAULT_MODEL,
        "t-prefill", 5_000, HandoffExpectations.nixlPull())));
  }

  static DecodeCall decodeCall(long firstTokenMs, long readMs) {
    return new DecodeCall(consumer.url(), "/v1/completions", body(), SimEngineOptions.DEFAULT_MODEL, "t-decode", false, firstTokenMs, readMs);
  }

  /** Runs a decode on the event loop, collecting its events, and returns the end (or the failure). */
  static Object decode(PrefillResult handoff, DecodeCall call, List<SseEvent> events) {
    Future<DecodeEnd> end = Future.<DecodeEnd>future(p -> vertx.runOnContext(v -> {
      DecodeStream stream = client.decode(handoff, call);
      stream.handler(events::add);
      stream.end().onComplete(p);
    }));
    try {
      return end.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void prefillThenDecodeGivesTheSingleEngineText() {
    PrefillResult handoff = prefill();
    assertEquals(producer.engineId(), handoff.producerEngineId());
    assertEquals("/v1/completions", handoff.endpoint());
    assertEquals("t-prefill", handoff.backendRequestId());
    List<SseEvent> events = new ArrayList<>();
    Object end = decode(handoff, decodeCall(5_000, 5_000), events);
    assertInstanceOf(DecodeEnd.class, end, String.valueOf(end));
    StringBuilder text = new StringBuilder();
    events.forEach(e -> {
      if (e instanceof SseEvent.Output o) text.append(o.text());
    });
    SimEngine single = consumer;
    String direct = await(Future.<Buffer>future(p -> vertx.runOnContext(v -> vertx.createHttpClient()
        .request(new io.vertx.core.http.RequestOptions()
            .setMethod(io.vertx.core.http.HttpMethod.POST).setAbsoluteURI(single.url() + "/v1/completions")
            .putHeader("content-type", "application/json"))
        .compose(r -> r.send(body().put("model", SimEngineOptions.DEFAULT_MODEL).toBuffer()))
        .compose(r -> r.body())
        .onComplete(p)))).toJsonObject().getJsonArray("choices").getJsonObject(0).getString("text");
    assertEquals(direct, text.toString());
    assertEquals(((DecodeEnd) end).finishReason(), "length");
  }

  /** A non-streaming client's frames are read once into the tree its answer is assembled from; a streaming one's are not. */
  @Test
  void eachFrameIsReadOnceForWhatTheClientGets() {
    for (boolean streams : new boolean[] {false, true}) {
      JsonObject body = body().put("stream", streams);
      DecodeCall call = new DecodeCall(consumer.url(), "/v1/completions", body, SimEngineOptions.DEFAULT_MODEL, "t-decode", false,
          5_000, 5_000);
      assertEquals(streams ? FrameUse.RELAY : FrameUse.ASSEMBLY, call.frameUse());
      List<SseEvent> events = new ArrayList<>();
      assertInstanceOf(DecodeEnd.class, decode(prefill(), call, events));
      List<SseFrame> frames = events.stream().map(e -> e instanceof SseEvent.Output o ? o.frame() : ((SseEvent.Metadata) e).frame())
          .toList();
      assertTrue(frames.size() >= 6, String.valueOf(frames.size()));
      for (SseFrame frame : frames) {
        assertEquals(new JsonObject(frame.data()), frame.json());
        assertEquals(!streams, frame.json() == frame.json(), "the tree is kept only for an assembly");
      }
    }
  }

  @Test
  void streamFaultsAreClassified() {
    // Only the timeout under test is short: a loaded machine must not turn another fault into a first-token timeout.
    expectFault("done_before_output", LENIENT, LENIENT, FaultKind.DONE_BEFORE_OUTPUT, "stream ended with [DONE] before any token arrived");
    expectFault("close_before_done;after=2", LENIENT, LENIENT, FaultKind.EOF_BEFORE_DONE, "stream ended before the [DONE] terminator");
    expectFault("silence_after;after=1", LENIENT, 300, FaultKind.DECODE_SILENCE,
        "engine went silent between tokens: nothing arrived within the 0.3s read timeout");
    expectFault("hang_after_headers", 300, LENIENT, FaultKind.FIRST_TOKEN_TIMEOUT, "no first token within 0.3s: no frames at all");
    expectFault("hang_before_headers", 300, LENIENT, FaultKind.FIRST_TOKEN_TIMEOUT, "no first token within 0.3s: no frames at all");
    expectFault("error_in_stream;after=0;code=503;message=overloaded", LENIENT, LENIENT, FaultKind.STREAM_ERROR_OBJECT, "overloaded");
  }

  private static final long LENIENT = 30_000;

  private void expectFault(String fault, long firstTokenMs, long readMs, FaultKind kind, String detail) {
    consumer.faults().clear();
    consumer.faults().add(new JsonObject().put("kind", fault.split(";")[0]).mergeIn(params(fault)));
    Object end = decode(prefill(), decodeCall(firstTokenMs, readMs), new ArrayList<>());
    EngineFault f = assertInstanceOf(EngineFault.class, end, fault + " → " + end);
    assertEquals(kind, f.kind(), fault);
    assertEquals(Phase.DECODE, f.phase());
    assertEquals(detail, f.detail(), fault);
  }

  private static JsonObject params(String fault) {
    JsonObject p = new JsonObject();
    String[] parts = fault.split(";");
    for (int i = 1; i < parts.length; i++) {
      String[] kv = parts[i].split("=");
      p.put(kv[0], kv[1].matches("\\d+") ? (Object) Integer.parseInt(kv[1]) : kv[1]);
    }
    return p;
  }

  @Test
  void prefillFaultsAreClassified() {
    producer.faults().add(new JsonObject().put("kind", "status").put("status", 503));
    EngineFault overloaded = prefillFault();
    assertEquals(FaultKind.ENGINE_OVERLOADED, overloaded.kind());
    assertEquals(502, overloaded.status());
    assertTrue(overloaded.isTransient());
    producer.faults().clear();
    producer.faults().add(new JsonObject().put("kind", "status").put("status", 400).put("message", "This model's maximum context length is 10 tokens."));
    EngineFault rejected = prefillFault();
    assertEquals(400, rejected.status());
    assertEquals("This model's maximum context length is 10 tokens.", rejected.detail());
    assertTrue(!rejected.isTransient());
    producer.faults().clear();
    producer.faults().add(new JsonObject().put("kind", "hang_before_headers"));
    Object result = awaitOutcome(client.prefill(new PrefillCall(producer.url(), "/v1/completions", body(), SimEngineOptions.DEFAULT_MODEL,
        "t", 300, HandoffExpectations.nixlPull())));
    EngineFault timeout = assertInstanceOf(EngineFault.class, result);
    assertEquals(FaultKind.PREFILL_TIMEOUT, timeout.kind());
    assertEquals(504, timeout.status());
  }

  private EngineFault prefillFault() {
    Object outcome = awaitOutcome(client.prefill(new PrefillCall(producer.url(), "/v1/completions", body(), SimEngineOptions.DEFAULT_MODEL,
        "t", LENIENT, HandoffExpectations.nixlPull())));
    return assertInstanceOf(EngineFault.class, outcome);
  }

  @Test
  void refusedConnectionIsAConnectError() {
    Object outcome = awaitOutcome(client.prefill(new PrefillCall("http://127.0.0.1:1", "/v1/completions", body(),
        SimEngineOptions.DEFAULT_MODEL, "t", 5_000, HandoffExpectations.nixlPull())));
    EngineFault fault = assertInstanceOf(EngineFault.class, outcome);
    assertEquals(FaultKind.CONNECT_ERROR, fault.kind());
    assertTrue(!fault.detail().contains("127.0.0.1"));
  }

  @Test
  void runningOutOfDescriptorsIsTheRoutersFaultNotTheEngines() {
    EngineFault fault = EngineClient.classify(new java.net.ConnectException("connect failed"), Phase.DECODE);
    assertEquals(FaultKind.CONNECT_ERROR, fault.kind());
    EngineFault local = EngineClient.classify(new io.vertx.core.VertxException(new java.net.SocketException("Too many open files")),
        Phase.DECODE);
    assertEquals(FaultKind.LOCAL_RESOURCES, local.kind());
    assertEquals(null, local.kind().failureClass(), "no breaker evidence against the engine");
    assertTrue(local.isTransient());
  }

  static Object awaitOutcome(Future<?> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aProducersCachedTokensCountOnlyWhenTheyAreACountOfTokens() {
    java.util.function.Function<Object, Integer> cached = v -> EngineClient.cachedTokens(new JsonObject()
        .put("prompt_tokens", 100).put("prompt_tokens_details", new JsonObject().put("cached_tokens", v)));
    assertEquals(96, cached.apply(96));
    assertEquals(0, cached.apply(0));
    assertEquals(96, cached.apply(96.0), "a JSON number written as 96.0 is still 96");
    for (Object broken : new Object[] {-16, 95.5, 1e12, "96", null}) {
      assertEquals(null, cached.apply(broken), "not a count of tokens: " + broken);
    }
    assertEquals(null, EngineClient.cachedTokens(new JsonObject().put("prompt_tokens", 100)), "no details, no figure");
  }
}
