package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What real vLLM engines send beyond plain text, in its shapes, streamed and not: tools, reasoning, logprobs, stop, token ids, API key. */
@ExtendWith(VertxExtension.class)
class RichOutputTest {

  private static JsonObject tool(String name) {
    return new JsonObject().put("type", "function").put("function", new JsonObject().put("name", name)
      .put("parameters", new JsonObject().put("type", "object")));
  }

  private static JsonObject choice(JsonObject body) {
    return body.getJsonArray("choices").getJsonObject(0);
  }

  private static List<JsonObject> outputChunks(SimClient.Reply r) {
    return r.jsonFrames().stream().filter(f -> !f.getJsonArray("choices").isEmpty()).collect(Collectors.toList());
  }

  @Test
  void toolCallsStreamAsVllmDeltasAndAssembleInTheFullAnswer(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions()).await();
    SimClient http = new SimClient(vertx);
    JsonObject request = SimClient.chat("weather in paris and rome").put("max_tokens", 6)
      .put("tools", new JsonArray().add(tool("get_weather")).add(tool("get_time")));

    JsonObject full = http.post(engine, "/v1/chat/completions", request.copy()).json();
    JsonObject message = choice(full).getJsonObject("message");
    assertEquals("tool_calls", choice(full).getString("finish_reason"));
    assertNull(message.getValue("content"));
    JsonArray calls = message.getJsonArray("tool_calls");
    assertEquals(2, calls.size(), "two tools and parallel_tool_calls not false: two parallel calls");
    assertEquals("get_weather", calls.getJsonObject(0).getJsonObject("function").getString("name"));
    assertEquals("get_time", calls.getJsonObject(1).getJsonObject("function").getString("name"));
    for (Object c : calls) {
      JsonObject call = (JsonObject) c;
      assertTrue(call.getString("id").matches("chatcmpl-tool-[0-9a-f]{32}"), call.encode());
      assertEquals("function", call.getString("type"));
      new JsonObject(call.getJsonObject("function").getString("arguments"));
    }

    SimClient.Reply stream = http.post(engine, "/v1/chat/completions", request.copy().put("stream", true));
    List<JsonObject> chunks = outputChunks(stream);
    assertEquals(new JsonObject().put("role", "assistant").put("content", ""), choice(chunks.get(0)).getJsonObject("delta"));
    assertTrue(chunks.get(0).containsKey("prompt_token_ids") && chunks.get(0).getValue("prompt_token_ids") == null,
      "vLLM passes prompt_token_ids explicitly: null unless asked");
    assertTrue(choice(chunks.get(1)).containsKey("token_ids") && choice(chunks.get(1)).getValue("token_ids") == null);
    StringBuilder[] args = {new StringBuilder(), new StringBuilder()};
    boolean[] headed = new boolean[2];
    for (JsonObject chunk : chunks.subList(1, chunks.size())) {
      JsonObject delta = choice(chunk).getJsonObject("delta");
      JsonObject call = delta.getJsonArray("tool_calls").getJsonObject(0);
      int index = call.getInteger("index");
      if (!headed[index]) {
        headed[index] = true;
        assertEquals(calls.getJsonObject(index).getString("id"), call.getString("id"));
        assertEquals("function", call.getString("type"));
        assertEquals(new JsonObject().put("name", calls.getJsonObject(index).getJsonObject("function").getString("name"))
          .put("arguments", ""), call.getJsonObject("function"));
      } else {
        assertEquals(List.of("index", "function"), List.copyOf(call.fieldNames()), "later deltas: index and fragment only");
        args[index].append(call.getJsonObject("function").getString("arguments"));
      }
    }
    assertEquals("tool_calls", choice(chunks.get(chunks.size() - 1)).getString("finish_reason"));
    for (int i = 0; i < 2; i++) {
      assertEquals(calls.getJsonObject(i).getJsonObject("function").getString("arguments"), args[i].toString());
    }

    JsonObject single = http.post(engine, "/v1/chat/completions", request.copy().put("parallel_tool_calls", false)).json();
    assertEquals(1, choice(single).getJsonObject("message").getJsonArray("tool_calls").size());
    JsonObject named = choice(http.post(engine, "/v1/chat/completions", request.copy().put("tool_choice", new JsonObject()
      .put("type", "function").put("function", new JsonObject().put("name", "get_time")))).json());
    assertEquals("length", named.getString("finish_reason"), "a named tool choice keeps the output's finish reason, as vLLM");
    assertEquals("", named.getJsonObject("message").getString("content"));
    assertEquals("get_time", named.getJsonObject("message").getJsonArray("tool_calls").getJsonObject(0)
      .getJsonObject("function").getString("name"));
    JsonObject none = http.post(engine, "/v1/chat/completions", request.copy().put("tool_choice", "none")).json();
    assertTrue(choice(none).getJsonObject("message").getJsonArray("tool_calls").isEmpty());
    assertEquals("length", choice(none).getString("finish_reason"));
  }

  @Test
  void reasoningParserSendsReasoningBeforeContentUnderItsField(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setReasoningField("reasoning_content")).await();
    SimClient http = new SimClient(vertx);
    JsonObject request = SimClient.chat("think about it").put("max_tokens", 6);
    JsonObject message = choice(http.post(engine, "/v1/chat/completions", request.copy()).json()).getJsonObject("message");
    String reasoning = message.getString("reasoning_content");
    String content = message.getString("content");
    assertFalse(reasoning.isEmpty());
    assertFalse(content.isEmpty());
    assertFalse(message.containsKey("reasoning"), "older engines name the field reasoning_content only");

    List<JsonObject> chunks = outputChunks(http.post(engine, "/v1/chat/completions", request.copy().put("stream", true)));
    StringBuilder r = new StringBuilder();
    StringBuilder c = new StringBuilder();
    boolean contentStarted = false;
    for (JsonObject chunk : chunks.subList(1, chunks.size())) {
      JsonObject delta = choice(chunk).getJsonObject("delta");
      if (delta.containsKey("reasoning_content")) {
        assertFalse(contentStarted, "reasoning comes before content");
        r.append(delta.getString("reasoning_content"));
      } else {
        contentStarted = true;
        c.append(delta.getString("content"));
      }
    }
    assertEquals(reasoning, r.toString());
    assertEquals(content, c.toString());

    JsonObject plain = choice(http.post(engine, "/v1/chat/completions", request.copy()
      .put("chat_template_kwargs", new JsonObject().put("enable_thinking", false))).json()).getJsonObject("message");
    assertNull(plain.getValue("reasoning_content"), "enable_thinking: false turns reasoning off");
    assertEquals(reasoning + content, plain.getString("content"));

    JsonObject tooled = choice(http.post(engine, "/v1/chat/completions", request.copy().put("tools", new JsonArray()
      .add(tool("lookup")))).json()).getJsonObject("message");
    assertFalse(tooled.getString("reasoning_content").isEmpty(), "reasoning first, then the tool call");
    assertEquals(1, tooled.getJsonArray("tool_calls").size());
    assertNull(tooled.getValue("content"));
  }

  @Test
  void logprobsWhenAskedWithTopLogprobsHonoured(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions()).await();
    SimClient http = new SimClient(vertx);
    JsonObject completion = SimClient.completion("count the stones").put("max_tokens", 5).put("ignore_eos", true).put("logprobs", 2);
    JsonObject lp = choice(http.post(engine, "/v1/completions", completion.copy()).json()).getJsonObject("logprobs");
    assertEquals(5, lp.getJsonArray("tokens").size());
    assertEquals(5, lp.getJsonArray("token_logprobs").size());
    assertEquals(5, lp.getJsonArray("text_offset").size());
    assertEquals(0, lp.getJsonArray("text_offset").getInteger(0));
    assertEquals(3, lp.getJsonArray("top_logprobs").getJsonObject(0).size(), "the sampled token and 2 alternatives");
    JsonObject streamed = new JsonObject();
    for (JsonObject chunk : outputChunks(http.post(engine, "/v1/completions", completion.copy().put("stream", true)))) {
      JsonObject part = choice(chunk).getJsonObject("logprobs");
      part.fieldNames().forEach(k -> {
        JsonArray acc = streamed.getJsonArray(k, new JsonArray());
        streamed.put(k, acc.addAll(part.getJsonArray(k)));
      });
    }
    assertEquals(lp, streamed);

    JsonObject chat = SimClient.chat("count the stones").put("max_tokens", 4).put("ignore_eos", true)
      .put("logprobs", true).put("top_logprobs", 3);
    JsonArray content = choice(http.post(engine, "/v1/chat/completions", chat.copy()).json()).getJsonObject("logprobs").getJsonArray("content");
    assertEquals(4, content.size());
    JsonObject entry = content.getJsonObject(0);
    assertTrue(entry.getDouble("logprob") < 0);
    assertEquals(3, entry.getJsonArray("top_logprobs").size());
    assertEquals(entry.getString("token"), entry.getJsonArray("top_logprobs").getJsonObject(0).getString("token"));
    assertTrue(entry.getJsonArray("bytes").size() == entry.getString("token").length());
    JsonArray streamedContent = new JsonArray();
    outputChunks(http.post(engine, "/v1/chat/completions", chat.copy().put("stream", true))).stream().skip(1)
      .forEach(chunk -> streamedContent.addAll(choice(chunk).getJsonObject("logprobs").getJsonArray("content")));
    assertEquals(content, streamedContent);

    assertEquals(400, http.post(engine, "/v1/chat/completions", SimClient.chat("x").put("top_logprobs", 2)).status);
    assertNull(choice(http.post(engine, "/v1/completions", SimClient.completion("no logprobs")).json()).getValue("logprobs"));
  }

  @Test
  void stopStringEndsWithStopReasonAndIsNotEmitted(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions()).await();
    SimClient http = new SimClient(vertx);
    Generator.Output natural = Generator.generate("where does it stop", 0, 1.0, 10, true);
    String stop = natural.tokens().get(3).strip();
    JsonObject request = SimClient.completion("where does it stop").put("max_tokens", 10).put("ignore_eos", true)
      .put("stop", new JsonArray().add("never-there").add(stop));
    JsonObject c = choice(http.post(engine, "/v1/completions", request.copy()).json());
    String text = natural.text();
    assertEquals(text.substring(0, text.indexOf(stop)), c.getString("text"));
    assertEquals("stop", c.getString("finish_reason"));
    assertEquals(stop, c.getString("stop_reason"));
    List<JsonObject> chunks = outputChunks(http.post(engine, "/v1/completions", request.copy().put("stream", true)));
    assertEquals(c.getString("text"), chunks.stream().map(ch -> choice(ch).getString("text")).collect(Collectors.joining()));
    JsonObject last = choice(chunks.get(chunks.size() - 1));
    assertEquals("stop", last.getString("finish_reason"));
    assertEquals(stop, last.getString("stop_reason"));
  }

  @Test
  void returnTokenIdsAndIncludeUsage(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions()).await();
    SimClient http = new SimClient(vertx);
    JsonObject request = SimClient.completion("four prompt words here").put("max_tokens", 5).put("ignore_eos", true)
      .put("return_token_ids", true);
    JsonObject full = choice(http.post(engine, "/v1/completions", request.copy()).json());
    assertEquals(5, full.getJsonArray("token_ids").size());
    assertEquals(4, full.getJsonArray("prompt_token_ids").size());
    List<JsonObject> frames = http.post(engine, "/v1/completions", request.copy().put("stream", true)
      .put("stream_options", new JsonObject().put("include_usage", true))).jsonFrames();
    JsonArray ids = new JsonArray();
    frames.stream().filter(f -> !f.getJsonArray("choices").isEmpty()).forEach(f -> ids.addAll(choice(f).getJsonArray("token_ids")));
    assertEquals(full.getJsonArray("token_ids"), ids);
    assertEquals(full.getJsonArray("prompt_token_ids"), choice(frames.get(0)).getJsonArray("prompt_token_ids"));
    JsonObject usage = frames.get(frames.size() - 1);
    assertTrue(usage.getJsonArray("choices").isEmpty());
    assertEquals(5, usage.getJsonObject("usage").getInteger("completion_tokens"));

    JsonObject chat = http.post(engine, "/v1/chat/completions", SimClient.chat("two words").put("max_tokens", 3)
      .put("ignore_eos", true).put("return_token_ids", true)).json();
    assertEquals(3, choice(chat).getJsonArray("token_ids").size());
    assertFalse(chat.getJsonArray("prompt_token_ids").isEmpty());
  }

  @Test
  void apiKeyGuardsV1LikeVllmAndCountsRefusals(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setApiKey("sekret")).await();
    SimClient http = new SimClient(vertx);
    SimClient.Reply bare = http.get(engine, "/v1/models");
    assertEquals(401, bare.status);
    assertEquals(new JsonObject().put("error", "Unauthorized"), bare.json());
    assertEquals(401, http.post(engine, "/v1/completions", SimClient.completion("x"), "authorization", "Bearer wrong").status);
    assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion("x"), "authorization", "Bearer sekret").status);
    assertEquals(200, http.get(engine, "/health").status);
    assertEquals(200, http.get(engine, "/version").status);
    assertEquals(2, engine.stats().getLong("unauthorized"));
  }
}
