package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.ConnectException;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every fault kind, observed the way a plain HTTP client (such as the router) observes it. */
@ExtendWith(VertxExtension.class)
class FaultInjectionTest {

  private static final String PROMPT = "write a long story about the river and the stone in the light of morning";
  private static final long SHORT_IDLE_MS = 500;

  private Vertx vertx;
  private MutableClock clock;
  private SimEngine engine;
  private SimEngine consumer;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    this.vertx = vertx;
    clock = new MutableClock();
    engine = SimEngine.start(vertx, new SimEngineOptions().setName("e"), clock).await();
    consumer = SimEngine.start(vertx, new SimEngineOptions().setName("c").setRole("decode")).await();
    http = new SimClient(vertx);
  }

  private static JsonObject streamChat() {
    return SimClient.chat(PROMPT).put("stream", true).put("max_tokens", 30).put("ignore_eos", true);
  }

  private static JsonObject streamCompletion() {
    return SimClient.completion(PROMPT).put("stream", true).put("max_tokens", 30).put("ignore_eos", true);
  }

  private static boolean isOutput(JsonObject frame) {
    JsonArray choices = frame.getJsonArray("choices");
    if (choices == null || choices.isEmpty()) {
      return false;
    }
    JsonObject choice = choices.getJsonObject(0);
    String text = choice.containsKey("delta") ? choice.getJsonObject("delta").getString("content") : choice.getString("text");
    return text != null && !text.isEmpty();
  }

  private static long outputFrames(SimClient.Reply r) {
    return r.jsonFrames().stream().filter(FaultInjectionTest::isOutput).count();
  }

  private void assertIdle(SimEngine e) {
    assertTrue(http.eventually(() -> {
      JsonObject s = e.stats();
      return s.getInteger("running") == 0 && s.getInteger("waiting") == 0 && s.getInteger("blocks_in_use") == 0;
    }), () -> "engine not idle: " + e.stats());
  }

  @Test
  void statusOnEitherLeg() {
    SimClient.Reply r = http.post(engine, "/v1/completions", SimClient.completion(PROMPT),
      "x-sim-fault", "status;status=429;message=slow down");
    assertEquals(429, r.status);
    assertEquals(ApiError.envelope("slow down", "Too Many Requests", null, 429), r.json());

    SimClient.Reply stream = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "status;status=500");
    assertEquals(500, stream.status);
    assertEquals("InternalServerError", stream.json().getJsonObject("error").getString("type"));

    JsonObject prefill = SimClient.prefillLeg(SimClient.completion(PROMPT).put("sim_fault", "status;status=503;phase=prefill"));
    SimClient.Reply p = http.post(engine, "/v1/completions", prefill);
    assertEquals(503, p.status);
    assertEquals("Service Unavailable", p.json().getJsonObject("error").getString("type"));

    JsonObject decode = SimClient.completion(PROMPT).put("sim_fault", "status;status=503;phase=prefill");
    assertEquals(200, http.post(engine, "/v1/completions", decode).status);
    assertEquals("status", engine.requests().get(2).getString("fault"));
    assertNull(engine.requests().get(3).getValue("fault"));
    assertIdle(engine);
  }

  @Test
  void aRuleNamingAModelAppliesOnlyToRequestsOfIt(Vertx vertx) {
    SimEngine lora = SimEngine.start(vertx, new SimEngineOptions().setName("l")
      .setLoraModules(java.util.Map.of("other-lora", "/adapters/other"))).await();
    String missing = "The model `other-lora` does not exist.";
    lora.faults().add(new JsonObject().put("kind", "status").put("status", 404).put("message", missing)
      .put("type", "NotFoundError").put("model", "other-lora").put("count", 5));
    assertEquals("other-lora", lora.faults().list().get(0).toJson().getString("model"));
    assertEquals(200, http.post(lora, "/v1/completions", SimClient.completion(PROMPT)).status, "the base model is not hit");
    SimClient.Reply r = http.post(lora, "/v1/completions", SimClient.completion(PROMPT).put("model", "other-lora"));
    assertEquals(404, r.status);
    assertEquals(ApiError.envelope(missing, "NotFoundError", null, 404), r.json());
    assertEquals(4, lora.faults().list().get(0).count(), "only the adapter's request used the rule");
    assertThrowsIllegal(() -> lora.faults().add(new JsonObject().put("kind", "status").put("model", "")));
  }

  private static void assertThrowsIllegal(Runnable r) {
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, r::run);
  }

  @Test
  void refuseClosesTheConnectionThenRefusesUntilResumed() {
    int port = engine.port();
    SimClient.Reply dropped = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "refuse");
    assertEquals(0, dropped.status);
    assertNotNull(dropped.failure);

    assertTrue(http.eventually(() -> http.get(engine, "/health").failure instanceof ConnectException));
    assertTrue(http.eventually(() -> http.post(engine, "/v1/completions", SimClient.completion(PROMPT)).failure instanceof ConnectException),
        "a stale pooled connection may fail first; a fresh one is refused");

    engine.resumeListening().await();
    assertEquals(port, engine.port());
    assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion(PROMPT)).status);

    engine.stopListening().await();
    assertTrue(http.eventually(() -> http.get(engine, "/health").failure instanceof ConnectException));
    engine.resumeListening().await();
    assertEquals(200, http.get(engine, "/health").status);
  }

  @Test
  void refuseForSecondsComesBackByItself() {
    http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "refuse;seconds=0.2");
    assertTrue(http.eventually(() -> http.get(engine, "/health").status == 200));
    assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion(PROMPT)).status);
  }

  @Test
  void resetBeforeHeadersAndMidStream() {
    SimClient.Reply early = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "reset");
    assertEquals(0, early.status);
    assertNotNull(early.failure);

    SimClient.Reply mid = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "reset;after=2");
    assertEquals(200, mid.status);
    assertNotNull(mid.failure);
    assertEquals(2, outputFrames(mid));
    assertFalse(mid.hasDone());

    SimClient.Reply body = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "reset;after=2");
    assertNotNull(body.failure);
    assertIdle(engine);
  }

  @Test
  void hangBeforeHeadersNeverAnswersAndIsCleanedUpWhenTheClientLeaves() {
    SimClient.Reply r = http.postWithIdleTimeout(engine, "/v1/completions", SimClient.completion(PROMPT), SHORT_IDLE_MS,
      "x-sim-fault", "hang_before_headers");
    assertEquals(0, r.status);
    assertNotNull(r.failure);
    assertIdle(engine);
  }

  @Test
  void hangAfterHeadersSends200ThenNothing() {
    SimClient.Reply r = http.postWithIdleTimeout(engine, "/v1/chat/completions", streamChat(), SHORT_IDLE_MS,
      "x-sim-fault", "hang_after_headers");
    assertEquals(200, r.status);
    assertTrue(r.header("content-type").startsWith("text/event-stream"));
    assertEquals("", r.text);
    assertNotNull(r.failure);

    SimClient.Reply plain = http.postWithIdleTimeout(engine, "/v1/completions", SimClient.completion(PROMPT), SHORT_IDLE_MS,
      "x-sim-fault", "hang_after_headers");
    assertEquals(200, plain.status);
    assertEquals("", plain.text);
    assertNotNull(plain.failure);
    assertIdle(engine);
  }

  @Test
  void metadataFramesComeBeforeOutput() {
    SimClient.Reply chat = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "metadata_then_output;frames=4");
    List<JsonObject> frames = chat.jsonFrames();
    for (int i = 0; i < 4; i++) {
      assertFalse(isOutput(frames.get(i)), "frame " + i + " should be metadata");
    }
    assertEquals("assistant", frames.get(0).getJsonArray("choices").getJsonObject(0).getJsonObject("delta").getString("role"));
    assertTrue(isOutput(frames.get(4)));
    assertEquals(30, outputFrames(chat));
    assertTrue(chat.endsWithDone());

    SimClient.Reply completion = http.post(engine, "/v1/completions", streamCompletion(),
      "x-sim-fault", "metadata_then_output;frames=2;interval_ms=5");
    List<JsonObject> cf = completion.jsonFrames();
    assertEquals("", cf.get(0).getJsonArray("choices").getJsonObject(0).getString("text"));
    assertEquals("", cf.get(1).getJsonArray("choices").getJsonObject(0).getString("text"));
    assertTrue(isOutput(cf.get(2)));
    assertTrue(completion.endsWithDone());
  }

  @Test
  void doneBeforeOutput() {
    SimClient.Reply chat = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "done_before_output");
    assertEquals(200, chat.status);
    List<String> frames = chat.frames();
    assertEquals(2, frames.size());
    assertEquals("assistant", new JsonObject(frames.get(0)).getJsonArray("choices").getJsonObject(0).getJsonObject("delta")
      .getString("role"));
    assertEquals("[DONE]", frames.get(1));

    SimClient.Reply completion = http.post(engine, "/v1/completions", streamCompletion(), "x-sim-fault", "done_before_output");
    assertEquals(List.of("[DONE]"), completion.frames());

    SimClient.Reply plain = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "done_before_output");
    assertEquals(200, plain.status);
    assertEquals("", plain.json().getJsonArray("choices").getJsonObject(0).getString("text"));
    assertEquals(0, plain.json().getJsonObject("usage").getInteger("completion_tokens"));
    assertIdle(engine);
  }

  @Test
  void closeBeforeDone() {
    SimClient.Reply r = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "close_before_done;after=3");
    assertEquals(200, r.status);
    assertNull(r.failure, "the response ends cleanly");
    assertEquals(3, outputFrames(r));
    assertFalse(r.hasDone());

    SimClient.Reply plain = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "close_before_done;after=3");
    assertNotNull(plain.failure, "a non-streaming body is cut short");
    assertIdle(engine);
  }

  @Test
  void silenceAfterTokens() {
    SimClient.Reply r = http.postWithIdleTimeout(engine, "/v1/completions", streamCompletion(), SHORT_IDLE_MS,
      "x-sim-fault", "silence_after;after=2");
    assertEquals(200, r.status);
    assertEquals(2, outputFrames(r));
    assertFalse(r.hasDone());
    assertNotNull(r.failure);

    SimClient.Reply plain = http.postWithIdleTimeout(engine, "/v1/completions", SimClient.completion(PROMPT), SHORT_IDLE_MS,
      "x-sim-fault", "silence_after;after=2");
    assertEquals(0, plain.status);
    assertNotNull(plain.failure);
    assertIdle(engine);
  }

  @Test
  void errorInStreamAfterOutputAndBeforeOutput() {
    SimClient.Reply r = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "error_in_stream;after=2;code=503");
    assertEquals(200, r.status);
    List<String> frames = r.frames();
    assertEquals(2, outputFrames(r));
    assertEquals(ApiError.envelope("Service Unavailable", "Service Unavailable", null, 503), new JsonObject(frames.get(frames.size() - 2)));
    assertEquals("[DONE]", frames.get(frames.size() - 1));

    SimClient.Reply early = http.post(engine, "/v1/completions", streamCompletion(), "x-sim-fault", "error_in_stream");
    assertEquals(List.of(ApiError.envelope("Internal server error", "InternalServerError", null, 500).encode(), "[DONE]"),
      early.frames());

    SimClient.Reply custom = http.post(engine, "/v1/completions", streamCompletion(),
      "x-sim-fault", "error_in_stream;after=1;code=400;message=bad thing;type=BadRequestError");
    assertEquals(ApiError.envelope("bad thing", "BadRequestError", null, 400), custom.jsonFrames().get(1));

    SimClient.Reply plain = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "error_in_stream;code=502");
    assertEquals(502, plain.status);
    assertEquals("Bad Gateway", plain.json().getJsonObject("error").getString("type"));
    assertIdle(engine);
  }

  private JsonObject prefillWith(String... faultHeader) {
    String[] headers = faultHeader.length == 0 ? new String[0] : new String[] {"x-sim-fault", faultHeader[0]};
    SimClient.Reply r = http.post(engine, "/v1/completions", SimClient.prefillLeg(SimClient.completion(PROMPT)), headers);
    assertEquals(200, r.status, r.text);
    assertTrue(r.json().containsKey("kv_transfer_params"));
    return r.json();
  }

  @Test
  void descriptorMissingNoEngineIdAndWrongSideChannel() {
    assertNull(prefillWith("descriptor_missing").getValue("kv_transfer_params"));
    assertEquals(0, engine.stats().getInteger("blocks_in_use"));

    JsonObject noId = prefillWith("descriptor_no_engine_id").getJsonObject("kv_transfer_params");
    assertFalse(noId.containsKey("remote_engine_id"));
    assertTrue(noId.containsKey("remote_block_ids"));

    JsonObject wrong = prefillWith("descriptor_wrong_side_channel").getJsonObject("kv_transfer_params");
    assertNotEquals(engine.sideChannelPort(), wrong.getInteger("remote_port"));
    assertEquals(engine.engineId(), wrong.getString("remote_engine_id"));
    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(SimClient.completion(PROMPT), wrong));
    assertEquals(200, decode.status);
    assertEquals("recomputed", decode.header("x-sim-kv"));
    assertEquals(1, consumer.stats().getInteger("kv_transfer_failed"));
  }

  @Test
  void descriptorBadBlockIdVariants() {
    JsonArray strings = prefillWith("descriptor_bad_block_ids").getJsonObject("kv_transfer_params").getJsonArray("remote_block_ids");
    strings.getJsonArray(0).forEach(id -> assertInstanceOf(String.class, id));
    JsonArray floats = prefillWith("descriptor_bad_block_ids;variant=floats").getJsonObject("kv_transfer_params")
      .getJsonArray("remote_block_ids");
    floats.getJsonArray(0).forEach(id -> assertInstanceOf(Double.class, id));
    JsonArray booleans = prefillWith("descriptor_bad_block_ids;variant=booleans").getJsonObject("kv_transfer_params")
      .getJsonArray("remote_block_ids");
    booleans.getJsonArray(0).forEach(id -> assertInstanceOf(Boolean.class, id));
    JsonArray negative = prefillWith("descriptor_bad_block_ids;variant=negative").getJsonObject("kv_transfer_params")
      .getJsonArray("remote_block_ids");
    negative.getJsonArray(0).forEach(id -> assertTrue((Integer) id < 0));
    Object notList = prefillWith("descriptor_bad_block_ids;variant=not_list").getJsonObject("kv_transfer_params")
      .getValue("remote_block_ids");
    assertFalse(notList instanceof JsonArray);
    JsonArray mixed = prefillWith("descriptor_bad_block_ids;variant=mixed").getJsonObject("kv_transfer_params")
      .getJsonArray("remote_block_ids").getJsonArray(0);
    assertInstanceOf(Integer.class, mixed.getValue(0));
    assertInstanceOf(String.class, mixed.getValue(1));

    SimClient.Reply floatsRaw = http.post(engine, "/v1/completions", SimClient.prefillLeg(SimClient.completion(PROMPT)),
      "x-sim-fault", "descriptor_bad_block_ids;variant=floats");
    assertTrue(floatsRaw.text.matches(".*\"remote_block_ids\":\\[\\[\\d+\\.0,.*"), floatsRaw.text);
  }

  @Test
  void descriptorForeignConnectorVariants() {
    JsonObject mooncake = prefillWith("descriptor_foreign_connector").getJsonObject("kv_transfer_params");
    assertTrue(mooncake.getString("transfer_id").startsWith("xfer-"));
    assertTrue(mooncake.containsKey("remote_bootstrap_addr"));
    assertFalse(mooncake.containsKey("remote_block_ids"));
    JsonObject sglang = prefillWith("descriptor_foreign_connector;variant=sglang").getJsonObject("kv_transfer_params");
    assertTrue(sglang.containsKey("bootstrap_host") && sglang.containsKey("bootstrap_room"));
    JsonObject lmcache = prefillWith("descriptor_foreign_connector;variant=lmcache").getJsonObject("kv_transfer_params");
    assertTrue(lmcache.getJsonObject("disagg_spec").containsKey("receiver_host"));
    assertEquals(0, engine.stats().getInteger("blocks_in_use"));
  }

  @Test
  void leaseExpiryMakesTheConsumerRecompute() {
    JsonObject descriptor = prefillWith("lease_expiry").getJsonObject("kv_transfer_params");
    assertEquals(1, engine.stats().getInteger("handoffs_expired"));
    assertEquals(0, engine.stats().getInteger("blocks_in_use"));
    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(SimClient.completion(PROMPT), descriptor));
    assertEquals(200, decode.status);
    assertEquals("recomputed", decode.header("x-sim-kv"));
  }

  @Test
  void kvTransferFailIsA500OrAnErrorFrame() {
    JsonObject descriptor = prefillWith().getJsonObject("kv_transfer_params");
    JsonObject client = SimClient.completion(PROMPT);
    SimClient.Reply failed = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor), "x-sim-fault", "kv_transfer_fail");
    assertEquals(500, failed.status);
    assertEquals("failed", failed.header("x-sim-kv"));
    assertEquals("Internal server error", failed.json().getJsonObject("error").getString("message"));

    JsonObject second = prefillWith().getJsonObject("kv_transfer_params");
    SimClient.Reply streamed = http.post(consumer, "/v1/completions",
      SimClient.decodeLeg(client.copy().put("stream", true), second).put("sim_fault", "kv_transfer_fail;phase=decode"));
    assertEquals(200, streamed.status);
    assertEquals(List.of(ApiError.envelope("Internal server error", "InternalServerError", null, 500).encode(), "[DONE]"),
      streamed.frames());
    assertEquals("failed", consumer.requests().get(1).getString("kv"));
    assertEquals(2, consumer.stats().getInteger("kv_transfer_failed"));
    assertIdle(consumer);
  }

  @Test
  void health503UntilClearedOrExpired() {
    SimClient.Reply post = http.post(engine, "/sim/faults", new JsonObject().put("kind", "health_503"));
    assertEquals(200, post.status);
    assertEquals(503, http.get(engine, "/health").status);
    assertEquals(503, http.get(engine, "/ping").status);
    assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion(PROMPT)).status);
    assertEquals(200, http.delete(engine, "/sim/faults").status);
    assertEquals(200, http.get(engine, "/health").status);

    http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "health_503;seconds=10");
    assertEquals(503, http.get(engine, "/health").status);
    clock.advance(Duration.ofSeconds(11));
    assertEquals(200, http.get(engine, "/health").status);
  }

  @Test
  void slowTokensStillDeliverEveryToken() {
    SimClient.Reply r = http.post(engine, "/v1/completions", streamCompletion().put("max_tokens", 5), "x-sim-fault", "slow_tokens;itl_ms=5");
    assertEquals(5, outputFrames(r));
    assertTrue(r.endsWithDone());
    assertEquals("slow_tokens", engine.requests().get(0).getString("fault"));
  }

  @Test
  void queueFull() {
    SimClient.Reply r = http.post(engine, "/v1/chat/completions", streamChat(), "x-sim-fault", "queue_full");
    assertEquals(503, r.status);
    assertEquals(ApiError.envelope("Request queue full.", "Service Unavailable", null, 503), r.json());
  }

  @Test
  void unknownFaultKindIsRejected() {
    SimClient.Reply r = http.post(engine, "/v1/completions", SimClient.completion(PROMPT), "x-sim-fault", "explode");
    assertEquals(400, r.status);
    assertTrue(r.json().getJsonObject("error").getString("message").contains("unknown fault kind"));
  }
}
