package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** End to end through the router: prefill on a producer, validated handoff, decode on another engine. */
@Timeout(60)
class DisaggregatedExecutionTest {
  static RouterHarness h;
  /** Fields a newer engine might put in its descriptor, unknown to the router. */
  static final JsonObject VENDOR_FIELDS = new JsonObject().put("x_vendor_hint", new JsonObject()
      .put("nested", new JsonArray().add(1).add(new JsonArray().add(2).add(3))).put("ratio", 0.5)).put("kv_cache_dtype", "fp8");

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, sim) -> sim.setDescriptorExtras(VENDOR_FIELDS));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  static JsonObject completion(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "The narwhal swims under the arctic ice")
        .put("max_tokens", 12).put("temperature", 0.7).put("seed", 42).put("stream", stream);
  }

  static JsonObject chat(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("stream", stream).put("max_tokens", 10)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "tell me about tusks")));
  }

  /** What one engine answers directly for the same request, non-streaming. */
  static JsonObject direct(String path, JsonObject body) {
    RouterHarness.Reply reply = h.direct(h.engine("D0"), path, body.copy().put("stream", false));
    assertEquals(200, reply.status(), reply.body());
    return reply.json().getJsonArray("choices").getJsonObject(0);
  }

  @Test
  void nonStreamingCompletionEqualsOneEngineAnswer() {
    JsonObject expected = direct("/v1/completions", completion(false));
    h.engines.values().forEach(SimEngine::clearRequests);
    RouterHarness.Reply reply = h.post("/v1/completions", completion(false));
    assertEquals(200, reply.status(), reply.body());
    JsonObject choice = reply.json().getJsonArray("choices").getJsonObject(0);
    assertEquals(expected.getString("text"), choice.getString("text"));
    assertEquals(expected.getString("finish_reason"), choice.getString("finish_reason"));
    assertEquals("text_completion", reply.json().getString("object"));
    assertNotNull(reply.json().getJsonObject("usage"), "usage assembled from the engine's usage frame");
    assertNotNull(reply.requestId());

    JsonObject prefill = onlyRequest("P0");
    assertEquals(1, prefill.getJsonObject("body").getInteger("max_tokens"));
    assertEquals(false, prefill.getJsonObject("body").getBoolean("stream"));
    assertEquals(true, prefill.getJsonObject("body").getJsonObject("kv_transfer_params").getBoolean("do_remote_decode"));
    assertEquals(reply.requestId() + "-a1-prefill", prefill.getString("request_id"));

    JsonObject decode = onlyRequest("D0");
    JsonObject decodeBody = decode.getJsonObject("body");
    assertEquals(12, decodeBody.getInteger("max_tokens"));
    assertEquals(0.7, decodeBody.getDouble("temperature"));
    assertEquals(42, decodeBody.getInteger("seed"));
    assertEquals(true, decodeBody.getJsonObject("kv_transfer_params").getBoolean("do_remote_prefill"));
    assertEquals(h.engine("P0").engineId(), decodeBody.getJsonObject("kv_transfer_params").getString("remote_engine_id"));
    assertEquals("transferred", decode.getString("kv"), "the consumer pulled the producer's blocks");
    JsonObject forwarded = decodeBody.getJsonObject("kv_transfer_params");
    assertTrue(forwarded.containsKey("remote_blocks_expiry_time") && forwarded.getValue("remote_blocks_expiry_time") == null,
        "fields the router does not judge are forwarded, nulls included: " + forwarded);
    assertTrue(forwarded.getValue("tp_size") instanceof Integer && forwarded.getValue("remote_port") instanceof Integer,
        "integers stay integers");
    assertTrue(forwarded.getJsonArray("remote_block_ids").getValue(0) instanceof JsonArray, "nesting stays nesting");
    assertEquals(VENDOR_FIELDS.getJsonObject("x_vendor_hint"), forwarded.getJsonObject("x_vendor_hint"), "unknown fields arrive unchanged");
    assertEquals("fp8", forwarded.getString("kv_cache_dtype"));
    assertEquals(reply.requestId() + "-a1-decode", decode.getString("request_id"));
  }

  @Test
  void streamingCompletionRelaysTheSameText() {
    JsonObject expected = direct("/v1/completions", completion(false));
    RouterHarness.Reply reply = h.post("/v1/completions", completion(true));
    assertEquals(200, reply.status(), reply.body());
    assertTrue(reply.contentType().startsWith("text/event-stream"));
    assertEquals(expected.getString("text"), reply.streamedText());
    List<String> events = reply.events();
    assertEquals("[DONE]", events.get(events.size() - 1));
  }

  @Test
  void chatStreamAndNonStreamEqualOneEngineAnswer() {
    JsonObject expected = direct("/v1/chat/completions", chat(false));
    String text = expected.getJsonObject("message").getString("content");

    RouterHarness.Reply whole = h.post("/v1/chat/completions", chat(false));
    assertEquals(200, whole.status(), whole.body());
    assertEquals("chat.completion", whole.json().getString("object"));
    JsonObject message = whole.json().getJsonArray("choices").getJsonObject(0).getJsonObject("message");
    assertEquals("assistant", message.getString("role"));
    assertEquals(text, message.getString("content"));

    RouterHarness.Reply streamed = h.post("/v1/chat/completions", chat(true));
    assertEquals(200, streamed.status(), streamed.body());
    assertEquals(text, streamed.streamedText());
    JsonObject first = new JsonObject(streamed.events().get(0));
    assertEquals("assistant", first.getJsonArray("choices").getJsonObject(0).getJsonObject("delta").getString("role"),
        "the role frame is relayed ahead of the content");
  }

  @Test
  void streamOptionsUsageFrameIsRelayed() {
    JsonObject body = completion(true).put("stream_options", new JsonObject().put("include_usage", true));
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(200, reply.status());
    List<String> events = reply.events();
    JsonObject usage = new JsonObject(events.get(events.size() - 2));
    assertTrue(usage.getJsonArray("choices").isEmpty());
    assertNotNull(usage.getJsonObject("usage"));
  }

  @Test
  void clientKvTransferParamsReachNoEngine() {
    JsonObject body = completion(false).put("kv_transfer_params",
        new JsonObject().put("do_remote_prefill", true).put("remote_host", "10.0.0.66").put("remote_port", 5600));
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(200, reply.status(), reply.body());
    JsonObject prefillParams = onlyRequest("P0").getJsonObject("body").getJsonObject("kv_transfer_params");
    assertEquals(new JsonObject().put("do_remote_decode", true).put("do_remote_prefill", false), prefillParams);
    JsonObject decodeParams = onlyRequest("D0").getJsonObject("body").getJsonObject("kv_transfer_params");
    assertNotEquals("10.0.0.66", decodeParams.getString("remote_host"));
    assertEquals(h.engine("P0").engineId(), decodeParams.getString("remote_engine_id"));
  }

  @Test
  void journalRowCarriesTimingAndEngines() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/completions", completion(true));
    assertEquals(200, reply.status());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("completed", row.getString("terminal"));
    assertEquals("P0", row.getString("prefill_iid"));
    assertEquals("D0", row.getString("decode_iid"));
    assertEquals(true, row.getBoolean("crossed"));
    assertEquals(1, row.getInteger("attempts"));
    double ttft = row.getDouble("ttft_s");
    double firstByte = row.getDouble("first_byte_s");
    assertTrue(ttft > 0 && firstByte >= ttft, "first byte follows producer completion: " + row);
    assertTrue(row.getInteger("output_len") > 0);
    assertEquals(0, h.reservations(), "every reservation released");
    String metrics = h.get("/metrics").body();
    assertTrue(metrics.contains("narwhal_ttft_seconds_count"), metrics);
    assertTrue(metrics.contains("narwhal_first_byte_seconds_count"));
    assertTrue(metrics.contains("narwhal_served_total"));
  }

  private static JsonObject onlyRequest(String iid) {
    List<JsonObject> requests = h.engine(iid).requests();
    assertEquals(1, requests.size(), iid + " requests: " + requests);
    return requests.get(0);
  }

  @Test
  void modelsHealthReadyAndState() {
    assertEquals(RouterHarness.MODEL, h.get("/v1/models").json().getJsonArray("data").getJsonObject(0).getString("id"));
    assertEquals(200, h.get("/health").status());
    assertEquals(200, h.get("/ready").status());
    JsonObject state = h.get("/narwhal/state").json();
    assertEquals(2, state.getJsonArray("engines").size());
    assertFalse(state.encode().contains("127.0.0.1"), "state names no engine host");
  }
}
