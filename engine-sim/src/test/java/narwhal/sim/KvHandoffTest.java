package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(VertxExtension.class)
class KvHandoffTest {

  private static final String PROMPT = "please summarise the following forty words of text about rivers and stones "
    + "and light in the quiet morning near the harbor where the lanterns glow";

  private Vertx vertx;
  private MutableClock clock;
  private SimEngine producer;
  private SimEngine consumer;
  private SimEngine single;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    this.vertx = vertx;
    clock = new MutableClock();
    producer = SimEngine.start(vertx, new SimEngineOptions().setName("p").setRole("prefill"), clock).await();
    consumer = SimEngine.start(vertx, new SimEngineOptions().setName("d").setRole("decode"), clock).await();
    single = SimEngine.start(vertx, new SimEngineOptions().setName("s")).await();
    http = new SimClient(vertx);
  }

  private JsonObject prefill(SimEngine engine, JsonObject clientBody, String rid) {
    SimClient.Reply r = http.post(engine, clientBody.containsKey("messages") ? "/v1/chat/completions" : "/v1/completions",
      SimClient.prefillLeg(clientBody), "x-request-id", rid);
    assertEquals(200, r.status, r.text);
    return r.json();
  }

  /** vLLM answers a batched prefill with one choice per prompt and one descriptor, the first prompt's ({@code final_res_batch[0]}). */
  @Test
  void aBatchedPrefillHasOneChoicePerPromptButOneDescriptorTheFirstPrompts() {
    String second = "an entirely different prompt about copper and wind";
    JsonObject client = SimClient.completion(PROMPT).put("prompt", new JsonArray().add(PROMPT).add(second)).put("max_tokens", 8);
    JsonObject body = prefill(producer, client, "rid-b");
    JsonArray choices = body.getJsonArray("choices");
    assertEquals(2, choices.size(), body.encode());
    assertEquals(1, choices.getJsonObject(1).getInteger("index"));
    assertEquals(Generator.generate(second, 0, 1.0, 1, false).text(), choices.getJsonObject(1).getString("text"));
    assertEquals(Generator.countTokens(PROMPT) + Generator.countTokens(second), body.getJsonObject("usage").getInteger("prompt_tokens"));
    JsonObject kv = body.getJsonObject("kv_transfer_params");
    assertEquals(Generator.countTokens(PROMPT), kv.getInteger("remote_num_tokens"), "the descriptor covers the first prompt only");
    SimClient.Reply plain = http.post(single, "/v1/completions", client, "x-request-id", "rid-c");
    assertEquals(400, plain.status, "a batch is served only as a prefill: " + plain.text);
  }

  @Test
  void producerReturnsOneTokenAndAVllmDescriptor() {
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 40);
    JsonObject body = prefill(producer, client, "rid-1");
    JsonObject choice = body.getJsonArray("choices").getJsonObject(0);
    assertEquals("length", choice.getString("finish_reason"));
    assertEquals(Generator.generate(PROMPT, 0, 1.0, 1, false).text(), choice.getString("text"));
    assertEquals(1, body.getJsonObject("usage").getInteger("completion_tokens"));

    int promptTokens = Generator.countTokens(PROMPT);
    JsonObject kv = body.getJsonObject("kv_transfer_params");
    assertEquals(true, kv.getBoolean("do_remote_prefill"));
    assertEquals(false, kv.getBoolean("do_remote_decode"));
    assertEquals(producer.engineId(), kv.getString("remote_engine_id"));
    assertTrue(kv.getString("remote_request_id").matches("cmpl-rid-1-0-[0-9a-f]{8}"), kv.getString("remote_request_id"));
    assertEquals("127.0.0.1", kv.getString("remote_host"));
    assertEquals(producer.sideChannelPort(), kv.getInteger("remote_port"));
    assertEquals(1, kv.getInteger("tp_size"));
    assertEquals(1, kv.getInteger("dcp_size"));
    assertEquals(1, kv.getInteger("pp_size"));
    assertEquals(promptTokens, kv.getInteger("remote_num_tokens"));
    assertTrue(kv.containsKey("remote_blocks_expiry_time") && kv.getValue("remote_blocks_expiry_time") == null);
    assertEquals("pull", kv.getString("transfer_mode"));

    JsonArray groups = kv.getJsonArray("remote_block_ids");
    assertEquals(1, groups.size());
    JsonArray ids = groups.getJsonArray(0);
    assertEquals((promptTokens + 15) / 16, ids.size());
    ids.forEach(id -> assertTrue(id instanceof Integer && (Integer) id >= 0));

    JsonObject stats = producer.stats();
    assertEquals(1, stats.getInteger("handoffs_held"));
    assertEquals(ids.size(), stats.getInteger("blocks_in_use"));
    assertEquals("prefill", producer.requests().get(0).getString("phase"));
  }

  @Test
  void consumerPullsTheBlocksAndGeneratesWhatASingleEngineGives() {
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 40);
    JsonObject descriptor = prefill(producer, client, "rid-2").getJsonObject("kv_transfer_params");

    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor), "x-request-id", "rid-2");
    assertEquals(200, decode.status);
    assertEquals("transferred", decode.header("x-sim-kv"));
    String reference = http.post(single, "/v1/completions", client).json().getJsonArray("choices").getJsonObject(0).getString("text");
    assertEquals(reference, decode.json().getJsonArray("choices").getJsonObject(0).getString("text"));
    assertNull(decode.json().getValue("kv_transfer_params"));

    JsonObject p = producer.stats();
    assertEquals(1, p.getInteger("handoffs_freed"));
    assertEquals(0, p.getInteger("handoffs_held"));
    assertEquals(0, p.getInteger("blocks_in_use"));
    JsonObject d = consumer.stats();
    assertEquals(1, d.getInteger("kv_transferred"));
    assertEquals(0, d.getInteger("kv_recomputed"));
    assertEquals(0, d.getInteger("blocks_in_use"));
    JsonObject logged = consumer.requests().get(0);
    assertEquals("decode", logged.getString("phase"));
    assertEquals("transferred", logged.getString("kv"));
    assertEquals("rid-2", logged.getString("request_id"));
    assertEquals(descriptor, logged.getJsonObject("body").getJsonObject("kv_transfer_params"));
  }

  /** The consumer's {@code vllm:num_requests_waiting_by_reason} series (-1: absent). */
  private double waitingFor(SimEngine engine, String reason) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("vllm:num_requests_waiting_by_reason\\{[^}]*reason=\"" + reason
      + "\"} (\\S+)").matcher(http.get(engine, "/metrics").text);
    return m.find() ? Double.parseDouble(m.group(1)) : -1;
  }

  /**
   * vLLM's scheduler skips a request still waiting for its remote KV and reports it as waiting for reason
   * {@code deferred}; one waiting for a place in the batch is {@code capacity}. Both count in
   * {@code vllm:num_requests_waiting}.
   */
  @Test
  void aDecodeLegPullingItsKvWaitsDeferredNotForCapacity() {
    SimEngine slow = SimEngine.start(vertx, new SimEngineOptions().setName("slow").setRole("decode")
      .setKvTransferPerBlockMs(200), clock).await();
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 4);
    JsonObject descriptor = prefill(producer, client, "rid-d").getJsonObject("kv_transfer_params");
    assertEquals(0, waitingFor(slow, "deferred"));
    io.vertx.core.Future<SimClient.Reply> decode = http.callAsync(slow.port(), io.vertx.core.http.HttpMethod.POST,
      "/v1/completions", SimClient.decodeLeg(client, descriptor).toBuffer(), SimClient.DEFAULT_IDLE_TIMEOUT_MS,
      "x-request-id", "rid-d");
    assertTrue(http.eventually(() -> waitingFor(slow, "deferred") == 1), http.get(slow, "/metrics").text);
    assertEquals(0, waitingFor(slow, "capacity"), "pulling its KV is no wait for capacity");
    assertEquals(1, slow.stats().getInteger("waiting"), "vllm:num_requests_waiting counts it");
    assertEquals(1, slow.stats().getInteger("deferred"));
    assertEquals(200, decode.toCompletionStage().toCompletableFuture().join().status);
    assertEquals(0, waitingFor(slow, "deferred"));
    assertEquals(0, slow.stats().getInteger("deferred"));
  }

  @Test
  void streamedChatDecodeAfterHandoffMatchesSingleEngine() {
    JsonObject client = SimClient.chat(PROMPT).put("max_tokens", 40).put("stream", true)
      .put("stream_options", new JsonObject().put("include_usage", true));
    JsonObject descriptor = prefill(producer, client, "rid-3").getJsonObject("kv_transfer_params");
    SimClient.Reply decode = http.post(consumer, "/v1/chat/completions", SimClient.decodeLeg(client, descriptor), "x-request-id", "rid-3");
    assertEquals(200, decode.status);
    assertEquals("transferred", decode.header("x-sim-kv"));
    SimClient.Reply reference = http.post(single, "/v1/chat/completions", client);
    assertEquals(reference.streamedText(), decode.streamedText());
    assertTrue(decode.streamedText().length() > 0);
    assertTrue(decode.endsWithDone());
    assertEquals(0, producer.stats().getInteger("blocks_in_use"));
  }

  @Test
  void flatBlockIdModeGivesAFlatIntegerList() {
    SimEngine old = SimEngine.start(vertx, new SimEngineOptions().setName("old").setFlatBlockIds(true).setBlockSize(4)).await();
    JsonObject client = SimClient.completion(PROMPT);
    JsonObject kv = prefill(old, client, "rid-4").getJsonObject("kv_transfer_params");
    JsonArray ids = kv.getJsonArray("remote_block_ids");
    assertEquals((Generator.countTokens(PROMPT) + 3) / 4, ids.size());
    ids.forEach(id -> assertTrue(id instanceof Integer));
    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, kv));
    assertEquals("transferred", decode.header("x-sim-kv"));
    assertEquals(0, old.stats().getInteger("blocks_in_use"));
  }

  @Test
  void expiredHandoffIsRecomputedAndCounted() {
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 40);
    JsonObject descriptor = prefill(producer, client, "rid-5").getJsonObject("kv_transfer_params");
    clock.advance(Duration.ofSeconds(29));
    assertEquals(1, producer.stats().getInteger("handoffs_held"));
    clock.advance(Duration.ofSeconds(2));
    JsonObject p = producer.stats();
    assertEquals(1, p.getInteger("handoffs_expired"));
    assertEquals(0, p.getInteger("handoffs_held"));
    assertEquals(0, p.getInteger("blocks_in_use"));
    assertTrue(http.get(producer, "/metrics").text.contains("vllm:nixl_num_kv_expired_reqs_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 1.0"));

    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals(200, decode.status);
    assertEquals("recomputed", decode.header("x-sim-kv"));
    String reference = http.post(single, "/v1/completions", client).json().getJsonArray("choices").getJsonObject(0).getString("text");
    assertEquals(reference, decode.json().getJsonArray("choices").getJsonObject(0).getString("text"));
    assertEquals(1, consumer.stats().getInteger("kv_recomputed"));
    assertEquals("recomputed", consumer.requests().get(0).getString("kv"));
    assertTrue(http.get(consumer, "/metrics").text.contains("sim:kv_recomputed_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 1.0"));
  }

  @Test
  void zeroLeaseNeverExpires() {
    SimEngine forever = SimEngine.start(vertx, new SimEngineOptions().setName("f").setKvLeaseSeconds(0), clock).await();
    prefill(forever, SimClient.completion(PROMPT), "rid-6");
    clock.advance(Duration.ofDays(1));
    assertEquals(1, forever.stats().getInteger("handoffs_held"));
  }

  @Test
  void unknownHandoffIsRecomputed() {
    JsonObject client = SimClient.completion(PROMPT);
    JsonObject descriptor = prefill(producer, client, "rid-7").getJsonObject("kv_transfer_params")
      .put("remote_request_id", "cmpl-unknown-0-deadbeef");
    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals(200, decode.status);
    assertEquals("recomputed", decode.header("x-sim-kv"));
    assertEquals(1, producer.stats().getInteger("handoffs_held"));
    assertEquals(0, consumer.stats().getInteger("kv_transfer_failed"));
  }

  @Test
  void descriptorWithoutRequiredFieldsIsRecomputedWithoutAPull() {
    JsonObject client = SimClient.completion(PROMPT);
    JsonObject descriptor = new JsonObject().put("do_remote_prefill", true).put("do_remote_decode", false);
    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals(200, decode.status);
    assertEquals("recomputed", decode.header("x-sim-kv"));
  }

  @Test
  void sideChannelAnswers404ForUnknownAnd409ForAnotherEngine() {
    JsonObject descriptor = prefill(producer, SimClient.completion(PROMPT), "rid-8").getJsonObject("kv_transfer_params");
    JsonObject pull = new JsonObject().put("remote_engine_id", "someone-else")
      .put("remote_request_id", descriptor.getString("remote_request_id")).put("block_ids", new JsonArray());
    assertEquals(409, http.postRaw(producer.sideChannelPort(), "/kv/pull", pull.toBuffer()).status);
    pull.put("remote_engine_id", producer.engineId()).put("remote_request_id", "nope");
    assertEquals(404, http.postRaw(producer.sideChannelPort(), "/kv/pull", pull.toBuffer()).status);
    pull.put("remote_request_id", descriptor.getString("remote_request_id"));
    assertEquals(200, http.postRaw(producer.sideChannelPort(), "/kv/pull", pull.toBuffer()).status);
    assertEquals(404, http.postRaw(producer.sideChannelPort(), "/kv/pull", pull.toBuffer()).status);
    assertEquals(400, http.postRaw(producer.sideChannelPort(), "/kv/pull", Buffer.buffer("[")).status);
  }

  @Test
  void deadProducerFailsUnderFailPolicyAndIsRecomputedOtherwise() {
    SimEngine strict = SimEngine.start(vertx, new SimEngineOptions().setName("strict").setKvLoadFailurePolicy("fail")).await();
    JsonObject client = SimClient.completion(PROMPT);
    JsonObject descriptor = prefill(producer, client, "rid-9").getJsonObject("kv_transfer_params");
    producer.close().await();

    SimClient.Reply failed = http.post(strict, "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals(500, failed.status);
    assertEquals("failed", failed.header("x-sim-kv"));
    assertEquals(ApiError.envelope("Internal server error", "InternalServerError", null, 500), failed.json());

    SimClient.Reply streamed = http.post(strict, "/v1/completions", SimClient.decodeLeg(client.copy().put("stream", true), descriptor));
    assertEquals(200, streamed.status);
    assertEquals(List.of(ApiError.envelope("Internal server error", "InternalServerError", null, 500).encode(), "[DONE]"),
      streamed.frames());
    assertEquals(2, strict.stats().getInteger("kv_transfer_failed"));
    assertEquals(0, strict.stats().getInteger("blocks_in_use"));

    SimClient.Reply lenient = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals(200, lenient.status);
    assertEquals("recomputed", lenient.header("x-sim-kv"));
    assertEquals(1, consumer.stats().getInteger("kv_transfer_failed"));
    assertEquals(1, consumer.stats().getInteger("kv_recomputed"));
  }

  @Test
  void streamingPrefillIsAllowedAndStillHoldsTheBlocks() {
    JsonObject leg = SimClient.prefillLeg(SimClient.completion(PROMPT)).put("stream", true);
    SimClient.Reply r = http.post(producer, "/v1/completions", leg);
    assertEquals(200, r.status);
    assertEquals(1, r.jsonFrames().size());
    assertEquals("length", r.jsonFrames().get(0).getJsonArray("choices").getJsonObject(0).getString("finish_reason"));
    assertTrue(r.endsWithDone());
    assertEquals(1, producer.stats().getInteger("handoffs_held"));
  }

  @Test
  void heldBlocksCountAgainstCapacityUntilPulled() {
    SimEngine small = SimEngine.start(vertx, new SimEngineOptions().setName("small").setBlockSize(4).setTotalBlocks(4), clock).await();
    JsonObject client = SimClient.completion("one two three four five six seven eight");
    SimClient.Reply first = http.post(small, "/v1/completions", SimClient.prefillLeg(client));
    assertEquals(200, first.status);
    assertEquals(2, small.stats().getInteger("blocks_in_use"));
    assertTrue(http.get(small, "/metrics").text.contains("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 0.5"));

    SimClient.Reply full = http.post(small, "/v1/completions",
      SimClient.prefillLeg(SimClient.completion("nine ten eleven twelve thirteen fourteen fifteen sixteen")));
    assertEquals(503, full.status);
    assertEquals(ApiError.envelope("Request queue full.", "Service Unavailable", null, 503), full.json());

    JsonObject descriptor = first.json().getJsonObject("kv_transfer_params");
    assertEquals("transferred", http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, descriptor)).header("x-sim-kv"));
    assertEquals(0, small.stats().getInteger("blocks_in_use"));
    assertEquals(200, http.post(small, "/v1/completions", SimClient.prefillLeg(client)).status);
  }

  @Test
  void transferLatencyAndTtftStillGiveTheSameText() {
    SimEngine slowP = SimEngine.start(vertx, new SimEngineOptions().setName("sp").setTtftBaseMs(5).setTtftPerPromptTokenMs(0.2), clock).await();
    SimEngine slowD = SimEngine.start(vertx, new SimEngineOptions().setName("sd").setKvTransferPerBlockMs(3).setItlMs(1)
      .setItlPerRunningMs(0.5)).await();
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 12).put("stream", true);
    JsonObject descriptor = prefill(slowP, client, "rid-10").getJsonObject("kv_transfer_params");
    assertNotNull(descriptor);
    SimClient.Reply decode = http.post(slowD, "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals("transferred", decode.header("x-sim-kv"));
    assertEquals(http.post(single, "/v1/completions", client).streamedText(), decode.streamedText());
    JsonObject stats = slowD.stats();
    assertEquals(0, stats.getInteger("running"));
    assertEquals(0, stats.getInteger("waiting"));
  }
}
