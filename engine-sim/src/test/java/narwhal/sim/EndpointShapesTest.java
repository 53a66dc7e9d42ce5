package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(VertxExtension.class)
class EndpointShapesTest {

  private SimEngine engine;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    engine = SimEngine.start(vertx, new SimEngineOptions().setName("e1").setMaxModelLen(64)).await();
    http = new SimClient(vertx);
  }

  private static Generator.Output expected(String prompt, int maxTokens) {
    return Generator.generate(prompt, 0, 1.0, maxTokens, false);
  }

  @Test
  void completionNonStreamHasVllmShape() {
    SimClient.Reply r = http.post(engine, "/v1/completions", SimClient.completion("the cat sat on the mat").put("max_tokens", 40),
      "x-request-id", "abc-1");
    assertEquals(200, r.status);
    assertEquals("abc-1", r.header("x-request-id"));
    assertEquals("none", r.header("x-sim-kv"));
    JsonObject body = r.json();
    assertEquals("cmpl-abc-1", body.getString("id"));
    assertEquals("text_completion", body.getString("object"));
    assertTrue(body.getValue("created") instanceof Number);
    assertEquals(SimEngineOptions.DEFAULT_MODEL, body.getString("model"));
    JsonObject choice = body.getJsonArray("choices").getJsonObject(0);
    Generator.Output out = expected("the cat sat on the mat", 40);
    assertEquals(0, choice.getInteger("index"));
    assertEquals(out.text(), choice.getString("text"));
    assertTrue(choice.containsKey("logprobs") && choice.getValue("logprobs") == null);
    assertEquals("stop", choice.getString("finish_reason"));
    assertTrue(choice.containsKey("stop_reason") && choice.getValue("stop_reason") == null);
    JsonObject usage = body.getJsonObject("usage");
    assertEquals(6, usage.getInteger("prompt_tokens"));
    assertEquals(out.tokens().size(), usage.getInteger("completion_tokens"));
    assertEquals(6 + out.tokens().size(), usage.getInteger("total_tokens"));
    assertTrue(usage.containsKey("prompt_tokens_details") && usage.getValue("prompt_tokens_details") == null);
    assertTrue(body.containsKey("kv_transfer_params") && body.getValue("kv_transfer_params") == null);
  }

  @Test
  void maxTokensCutsWithFinishReasonLengthAndDefaultIs16() {
    JsonObject cut = http.post(engine, "/v1/completions", SimClient.completion("a b c").put("max_tokens", 2)).json();
    JsonObject choice = cut.getJsonArray("choices").getJsonObject(0);
    assertEquals("length", choice.getString("finish_reason"));
    assertEquals(2, cut.getJsonObject("usage").getInteger("completion_tokens"));
    assertEquals(expected("a b c", 2).text(), choice.getString("text"));

    JsonObject dflt = http.post(engine, "/v1/completions", SimClient.completion("a b c")).json();
    assertEquals(expected("a b c", 16).text(), dflt.getJsonArray("choices").getJsonObject(0).getString("text"));
  }

  @Test
  void chatNonStreamHasVllmShape() {
    SimClient.Reply r = http.post(engine, "/v1/chat/completions", SimClient.chat("hello there").put("max_completion_tokens", 40),
      "x-request-id", "r2");
    assertEquals(200, r.status);
    JsonObject body = r.json();
    assertEquals("chatcmpl-r2", body.getString("id"));
    assertEquals("chat.completion", body.getString("object"));
    JsonObject choice = body.getJsonArray("choices").getJsonObject(0);
    JsonObject message = choice.getJsonObject("message");
    assertEquals("assistant", message.getString("role"));
    String rendered = CompletionRequest.renderMessages(SimClient.chat("hello there").getJsonArray("messages"));
    assertEquals(expected(rendered, 40).text(), message.getString("content"));
    assertEquals(3, body.getJsonObject("usage").getInteger("prompt_tokens"));
    assertTrue(body.containsKey("kv_transfer_params"));
  }

  @Test
  void chatStreamSendsRoleFirstFinishOnLastContentThenUsageThenDone() {
    JsonObject req = SimClient.chat("stream to me please").put("stream", true).put("max_tokens", 40)
      .put("stream_options", new JsonObject());
    SimClient.Reply r = http.post(engine, "/v1/chat/completions", req, "x-request-id", "s1");
    assertEquals(200, r.status);
    assertTrue(r.header("content-type").startsWith("text/event-stream"));
    assertNull(r.failure);
    List<JsonObject> frames = r.jsonFrames();
    JsonObject first = frames.get(0);
    assertEquals("chat.completion.chunk", first.getString("object"));
    assertEquals("chatcmpl-s1", first.getString("id"));
    assertEquals(new JsonObject().put("role", "assistant").put("content", ""),
      first.getJsonArray("choices").getJsonObject(0).getJsonObject("delta"));
    JsonObject usageFrame = frames.get(frames.size() - 1);
    assertEquals(new JsonArray(), usageFrame.getJsonArray("choices"));
    String rendered = CompletionRequest.renderMessages(req.getJsonArray("messages"));
    Generator.Output out = expected(rendered, 40);
    assertEquals(out.tokens().size(), usageFrame.getJsonObject("usage").getInteger("completion_tokens"));
    assertEquals(5, usageFrame.getJsonObject("usage").getInteger("prompt_tokens"));
    List<JsonObject> content = frames.subList(1, frames.size() - 1);
    assertEquals(out.tokens().size(), content.size());
    for (int i = 0; i < content.size(); i++) {
      JsonObject choice = content.get(i).getJsonArray("choices").getJsonObject(0);
      assertEquals(out.tokens().get(i), choice.getJsonObject("delta").getString("content"));
      assertFalse(choice.getJsonObject("delta").containsKey("role"));
      Object finish = choice.getValue("finish_reason");
      assertEquals(i == content.size() - 1 ? "stop" : null, finish);
    }
    assertTrue(r.endsWithDone());
    assertEquals(out.text(), r.streamedText());
  }

  @Test
  void completionStreamChunksCarryNullsAndNoUsageWithoutStreamOptions() {
    JsonObject req = SimClient.completion("one two three").put("stream", true).put("max_tokens", 5);
    SimClient.Reply r = http.post(engine, "/v1/completions", req);
    assertEquals(200, r.status);
    List<JsonObject> frames = r.jsonFrames();
    Generator.Output out = expected("one two three", 5);
    assertEquals(out.tokens().size(), frames.size());
    for (int i = 0; i < frames.size(); i++) {
      JsonObject frame = frames.get(i);
      assertEquals("text_completion", frame.getString("object"));
      assertTrue(frame.containsKey("usage") && frame.getValue("usage") == null);
      JsonObject choice = frame.getJsonArray("choices").getJsonObject(0);
      assertEquals(out.tokens().get(i), choice.getString("text"));
      assertTrue(choice.containsKey("logprobs") && choice.containsKey("stop_reason") && choice.containsKey("finish_reason"));
      assertEquals(i == frames.size() - 1 ? "length" : null, choice.getValue("finish_reason"));
    }
    assertTrue(r.endsWithDone());
  }

  @Test
  void completionStreamWithIncludeUsageSendsUsageFrame() {
    JsonObject req = SimClient.completion("one two three").put("stream", true).put("max_tokens", 5)
      .put("stream_options", new JsonObject().put("include_usage", true));
    List<JsonObject> frames = http.post(engine, "/v1/completions", req).jsonFrames();
    JsonObject usage = frames.get(frames.size() - 1);
    assertEquals(new JsonArray(), usage.getJsonArray("choices"));
    assertEquals(3, usage.getJsonObject("usage").getInteger("prompt_tokens"));

    req.put("stream_options", new JsonObject().put("include_usage", false));
    frames = http.post(engine, "/v1/completions", req).jsonFrames();
    assertFalse(frames.get(frames.size() - 1).getJsonArray("choices").isEmpty());
  }

  @Test
  void streamOptionsWithoutStreamIs400() {
    SimClient.Reply r = http.post(engine, "/v1/completions",
      SimClient.completion("x y").put("stream_options", new JsonObject().put("include_usage", true)));
    assertEquals(400, r.status);
    JsonObject error = r.json().getJsonObject("error");
    assertEquals("Stream options can only be defined when `stream=True`.", error.getString("message"));
    assertEquals("BadRequestError", error.getString("type"));
    assertEquals(400, error.getInteger("code"));
    assertTrue(error.containsKey("param"));
  }

  @Test
  void unknownModelIs404() {
    SimClient.Reply r = http.post(engine, "/v1/chat/completions", SimClient.chat("hi").put("model", "nope"));
    assertEquals(404, r.status);
    JsonObject error = r.json().getJsonObject("error");
    assertEquals("The model `nope` does not exist.", error.getString("message"));
    assertEquals("NotFoundError", error.getString("type"));
    assertEquals("model", error.getString("param"));
    assertEquals(404, error.getInteger("code"));
  }

  @Test
  void validationErrorsAre400() {
    assertBadRequest(http.post(engine, "/v1/completions", new JsonObject().put("model", SimEngineOptions.DEFAULT_MODEL)));
    assertBadRequest(http.post(engine, "/v1/chat/completions", new JsonObject()));
    assertBadRequest(http.post(engine, "/v1/completions", SimClient.completion("x").put("max_tokens", "many")));
    assertBadRequest(http.post(engine, "/v1/completions", SimClient.completion("x").put("max_tokens", 0)));
    assertBadRequest(http.post(engine, "/v1/completions", SimClient.completion("x").put("stream", "yes")));
    assertBadRequest(http.post(engine, "/v1/completions", SimClient.completion("x").put("prompt", 42)));
    assertBadRequest(http.postRaw(engine.port(), "/v1/completions", Buffer.buffer("{not json")));

    SimClient.Reply tooLong = http.post(engine, "/v1/completions", SimClient.completion("a b c d").put("max_tokens", 61));
    assertBadRequest(tooLong);
    assertEquals("This model's maximum context length is 64 tokens. However, you requested 61 output tokens and your "
      + "prompt contains at least 4 input tokens, for a total of at least 65 tokens. Please reduce the length of the input "
      + "prompt or the number of requested output tokens. (parameter=input_tokens, value=4)",
      tooLong.json().getJsonObject("error").getString("message"));
    assertEquals("input_tokens", tooLong.json().getJsonObject("error").getString("param"));
  }

  private static void assertBadRequest(SimClient.Reply r) {
    assertEquals(400, r.status, r.text);
    JsonObject error = r.json().getJsonObject("error");
    assertEquals("BadRequestError", error.getString("type"));
    assertEquals(400, error.getInteger("code"));
    assertTrue(error.getString("message").length() > 0);
  }

  @Test
  void modelsHealthPingVersion() {
    JsonObject models = http.get(engine, "/v1/models").json();
    assertEquals("list", models.getString("object"));
    JsonObject card = models.getJsonArray("data").getJsonObject(0);
    assertEquals(SimEngineOptions.DEFAULT_MODEL, card.getString("id"));
    assertEquals("model", card.getString("object"));
    assertEquals("vllm", card.getString("owned_by"));
    assertEquals(64, card.getInteger("max_model_len"));

    SimClient.Reply health = http.get(engine, "/health");
    assertEquals(200, health.status);
    assertEquals("", health.text);
    assertEquals(200, http.get(engine, "/ping").status);
    assertEquals(new JsonObject().put("version", "0.29.0"), http.get(engine, "/version").json());
    assertEquals(404, http.get(engine, "/nothing-here").status);
  }

  @Test
  void metricsExposeVllmNames() {
    http.post(engine, "/v1/completions", SimClient.completion("a b c").put("max_tokens", 3));
    SimClient.Reply r = http.get(engine, "/metrics");
    assertEquals(200, r.status);
    assertTrue(r.header("content-type").startsWith("text/plain"));
    for (String name : new String[] {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
      "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:nixl_num_kv_expired_reqs",
      "sim:kv_transferred_total", "sim:kv_recomputed_total"}) {
      assertTrue(r.text.contains("\n" + name) || r.text.startsWith(name) || r.text.contains("# TYPE " + name), name);
    }
    assertTrue(r.text.contains("vllm:prompt_tokens_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 3.0"));
    assertTrue(r.text.contains("vllm:generation_tokens_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 3.0"));
  }

  @Test
  void attestationDescribesTheEngine() {
    JsonObject a = http.get(engine, "/attestation").json();
    assertEquals("0.29.0", a.getString("version"));
    assertEquals(SimEngineOptions.DEFAULT_MODEL, a.getString("model"));
    assertEquals("bfloat16", a.getString("dtype"));
    assertEquals(16, a.getInteger("block_size"));
    assertEquals(64, a.getInteger("max_model_len"));
    JsonObject kv = a.getJsonObject("kv_transfer_config");
    assertEquals("NixlConnector", kv.getString("kv_connector"));
    assertEquals("kv_both", kv.getString("kv_role"));
    assertEquals(engine.engineId(), kv.getString("engine_id"));
    assertEquals(30, kv.getJsonObject("kv_connector_extra_config").getInteger("kv_lease_duration"));
    assertEquals("pull", kv.getJsonObject("kv_connector_extra_config").getString("transfer_mode"));
    assertEquals(new JsonObject().put("host", "127.0.0.1").put("port", engine.sideChannelPort()), a.getJsonObject("kv_side_channel"));
    assertTrue(a.getLong("started_at") > 1_600_000_000L);
    assertEquals("http://127.0.0.1:" + engine.port(), engine.url());
    assertEquals(engine.port(), engine.options().getPort());
  }

  @Test
  void requestIdFallsBackToBodyThenRandom() {
    JsonObject body = http.post(engine, "/v1/completions", SimClient.completion("x y").put("request_id", "from-body")).json();
    assertEquals("cmpl-from-body", body.getString("id"));
    SimClient.Reply anon = http.post(engine, "/v1/chat/completions", SimClient.chat("x y"));
    String id = anon.json().getString("id");
    assertTrue(id.startsWith("chatcmpl-") && id.length() > "chatcmpl-".length());
    assertEquals(id.substring("chatcmpl-".length()), anon.header("x-request-id"));
  }

  @Test
  void everyInferenceRequestIsLogged() {
    http.post(engine, "/v1/completions", SimClient.completion("a b").put("max_tokens", 2), "x-request-id", "L1");
    http.post(engine, "/v1/chat/completions", SimClient.chat("hi").put("model", "nope"), "x-request-id", "L2");
    List<JsonObject> log = engine.requests();
    assertEquals(2, log.size());
    assertEquals("/v1/completions", log.get(0).getString("path"));
    assertEquals("L1", log.get(0).getString("request_id"));
    assertEquals("decode", log.get(0).getString("phase"));
    assertEquals("a b", log.get(0).getJsonObject("body").getString("prompt"));
    assertEquals("none", log.get(0).getString("kv"));
    assertEquals("L2", log.get(1).getString("request_id"));
    assertEquals(2, engine.stats().getInteger("requests"));
    engine.clearRequests();
    assertTrue(engine.requests().isEmpty());
  }
}
