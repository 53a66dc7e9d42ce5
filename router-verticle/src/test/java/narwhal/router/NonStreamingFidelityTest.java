package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A non-streaming client gets, field for field, what the engine itself answers for {@code stream: false}, although
 * the router assembles it from the decode stream: a property over many generated requests (text, tools, parallel
 * tools, every tool_choice, reasoning, logprobs, stop strings, token ids), engines running a reasoning parser.
 */
@Timeout(120)
class NonStreamingFidelityTest {
  static RouterHarness h;
  private static final List<String> WORDS = List.of("the", "river", "stone", "light", "engine", "blue", "north", "and", "of", "to");

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, sim) -> sim.setReasoningField("reasoning"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  /** Drops what legitimately differs (ids, {@code created}); explicit nulls stay (vLLM's full bodies spell them out and so must the router's). */
  static Object comparable(Object value) {
    if (value instanceof JsonObject o) {
      JsonObject out = new JsonObject();
      for (Map.Entry<String, Object> e : o) {
        if (e.getKey().equals("id") || e.getKey().equals("created")) continue;
        out.put(e.getKey(), comparable(e.getValue()));
      }
      return out;
    }
    if (value instanceof JsonArray a) {
      JsonArray out = new JsonArray();
      a.forEach(v -> out.add(comparable(v)));
      return out;
    }
    return value;
  }

  static JsonObject tool(String name) {
    return new JsonObject().put("type", "function").put("function", new JsonObject().put("name", name)
        .put("parameters", new JsonObject().put("type", "object")));
  }

  static JsonObject generated(Random r, int i) {
    boolean chat = r.nextBoolean();
    StringBuilder prompt = new StringBuilder("case " + i);
    for (int w = r.nextInt(6); w >= 0; w--) prompt.append(' ').append(WORDS.get(r.nextInt(WORDS.size())));
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 1 + r.nextInt(20))
        .put("seed", r.nextInt(1000)).put("temperature", r.nextInt(3) * 0.5);
    if (r.nextBoolean()) body.put("ignore_eos", true);
    if (chat) {
      body.put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", prompt.toString())));
      int tools = r.nextInt(4) - 1;
      if (tools > 0) {
        JsonArray list = new JsonArray();
        for (int t = 0; t < tools; t++) list.add(tool("fn_" + t));
        body.put("tools", list);
        if (r.nextInt(4) == 0) body.put("parallel_tool_calls", false);
        switch (r.nextInt(6)) {
          case 0 -> body.put("tool_choice", "none");
          case 1 -> body.put("tool_choice", "required");
          case 2 -> body.put("tool_choice", new JsonObject().put("type", "function")
              .put("function", new JsonObject().put("name", "fn_" + (tools - 1))));
          default -> { }
        }
      }
      if (r.nextBoolean()) body.put("logprobs", true).put("top_logprobs", r.nextInt(4));
      if (r.nextInt(4) == 0) body.put("chat_template_kwargs", new JsonObject().put("enable_thinking", false));
    } else {
      body.put("prompt", prompt.toString());
      if (r.nextBoolean()) body.put("logprobs", r.nextInt(4));
    }
    if (r.nextInt(3) == 0) {
      body.put("stop", new JsonArray().add(WORDS.get(r.nextInt(WORDS.size()))).add("r " + WORDS.get(r.nextInt(WORDS.size()))));
    }
    if (r.nextInt(3) == 0) body.put("return_token_ids", true);
    return body;
  }

  @Test
  void routerAnswerEqualsTheEnginesOwnNonStreamingAnswer() {
    Random r = new Random(11);
    int withTools = 0;
    int withStop = 0;
    for (int i = 0; i < 120; i++) {
      JsonObject body = generated(r, i);
      String path = body.containsKey("messages") ? "/v1/chat/completions" : "/v1/completions";
      RouterHarness.Reply routed = h.post(path, body.copy());
      RouterHarness.Reply direct = h.direct(h.engine("D0"), path, body.copy());
      assertEquals(200, routed.status(), routed.body());
      assertEquals(200, direct.status(), direct.body());
      assertEquals(comparable(direct.json()), comparable(routed.json()), "request " + body.encode());
      JsonObject choice = direct.json().getJsonArray("choices").getJsonObject(0);
      if ("tool_calls".equals(choice.getString("finish_reason"))) withTools++;
      if (choice.getValue("stop_reason") != null) withStop++;
    }
    assertTrue(withTools > 5 && withStop > 3, "the generator covers tools (" + withTools + ") and stop strings (" + withStop + ")");
  }
}
