package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Tool-call and reasoning deltas are output (docs/errors.md) like text: a stream that carries only them commits 200 and
 * meets the first-token bound. The engines pace their deltas {@code itl} apart and the first-token bound is shorter
 * than the time to the first content delta (reasoning) or than the whole stream (tools): were those deltas not output,
 * the requests would end in a first-token timeout.
 */
@Timeout(60)
class StructuredOutputStreamTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("engine", new JsonObject().put("first_token_timeout_s", 0.5).put("decode_read_timeout_s", 5)),
        (iid, sim) -> sim.setReasoningField("reasoning_content").setItlMs(250));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  static JsonObject chat(boolean stream, int maxTokens) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("stream", stream).put("max_tokens", maxTokens)
        .put("ignore_eos", true)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "plan a trip")));
  }

  static JsonObject withTool(JsonObject body) {
    return body.put("tools", new JsonArray().add(new JsonObject().put("type", "function")
        .put("function", new JsonObject().put("name", "book_train"))));
  }

  private static List<JsonObject> chunks(RouterHarness.Reply reply) {
    return reply.events().stream().filter(e -> !e.equals("[DONE]")).map(JsonObject::new).toList();
  }

  @Test
  void aStreamOfOnlyToolCallDeltasIsServed() throws Exception {
    JsonObject noThinking = withTool(chat(true, 4)).put("chat_template_kwargs", new JsonObject().put("enable_thinking", false));
    RouterHarness.Reply reply = h.post("/v1/chat/completions", noThinking);
    assertEquals(200, reply.status(), reply.body());
    assertEquals("[DONE]", reply.events().get(reply.events().size() - 1));
    assertEquals("", reply.streamedText(), "no text at all: the output is the tool call");
    StringBuilder arguments = new StringBuilder();
    for (JsonObject chunk : chunks(reply)) {
      JsonObject delta = chunk.getJsonArray("choices").getJsonObject(0).getJsonObject("delta");
      if (delta.getValue("tool_calls") instanceof JsonArray calls) {
        arguments.append(calls.getJsonObject(0).getJsonObject("function").getString("arguments"));
      }
    }
    new JsonObject(arguments.toString());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals(200, row.getInteger("status"), row.encode());
  }

  @Test
  void aStreamThatReasonsBeforeItsFirstContentIsServed() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat(true, 8));
    assertEquals(200, reply.status(), reply.body());
    List<JsonObject> chunks = chunks(reply);
    JsonObject firstOutput = chunks.get(1).getJsonArray("choices").getJsonObject(0).getJsonObject("delta");
    assertTrue(firstOutput.containsKey("reasoning_content"), "the first output delta is reasoning: " + firstOutput);
    assertEquals(200, h.journalRow(reply.requestId()).getInteger("status"));
  }

  @Test
  void nonStreamingAnswersKeepTheEnginesReasoningFieldAndToolCalls() {
    JsonObject reasoned = h.post("/v1/chat/completions", chat(false, 8)).json()
        .getJsonArray("choices").getJsonObject(0).getJsonObject("message");
    JsonObject direct = h.direct(h.engine("D0"), "/v1/chat/completions", chat(false, 8)).json()
        .getJsonArray("choices").getJsonObject(0).getJsonObject("message");
    assertEquals(direct.getString("reasoning_content"), reasoned.getString("reasoning_content"));
    assertEquals(direct.getString("content"), reasoned.getString("content"));
    assertFalse(reasoned.getString("reasoning_content").isEmpty());
    assertFalse(reasoned.containsKey("reasoning"), "kept under the engine's own name, not renamed");

    JsonObject called = h.post("/v1/chat/completions", withTool(chat(false, 4))).json().getJsonArray("choices").getJsonObject(0);
    assertEquals("tool_calls", called.getString("finish_reason"));
    assertNull(called.getJsonObject("message").getValue("content"));
    JsonObject call = called.getJsonObject("message").getJsonArray("tool_calls").getJsonObject(0);
    assertEquals("book_train", call.getJsonObject("function").getString("name"));
    assertTrue(call.getString("id").startsWith("chatcmpl-tool-"));
  }
}
