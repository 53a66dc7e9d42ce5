package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A non-streamed chat answer with no reasoning spells out the engine's own reasoning field as null: {@code reasoning}
 * on current vLLM, {@code reasoning_content} on older ones. Nothing in such a stream names the field; the router knows
 * it from the engine's earlier streams that carried reasoning.
 */
@Timeout(120)
class ReasoningFieldTest {

  private static JsonObject chat(boolean thinking, boolean stream) {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 12).put("seed", 3).put("stream", stream)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "think about the river")));
    if (!thinking) body.put("chat_template_kwargs", new JsonObject().put("enable_thinking", false));
    return body;
  }

  @ParameterizedTest
  @ValueSource(strings = {"reasoning_content", "reasoning"})
  void anAnswerWithoutReasoningNamesTheEnginesOwnField(String field) throws Exception {
    String other = field.equals("reasoning") ? "reasoning_content" : "reasoning";
    RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json,
        (iid, sim) -> sim.setReasoningField(field));
    try {
      RouterHarness.Reply streamed = h.post("/v1/chat/completions", chat(true, true));
      assertEquals(200, streamed.status(), streamed.body());
      assertTrue(streamed.body().contains("\"" + field + "\""), "the engine reasons under " + field + ": " + streamed.body());

      JsonObject plain = chat(false, false);
      RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/chat/completions", plain.copy());
      RouterHarness.Reply routed = h.post("/v1/chat/completions", plain.copy());
      assertEquals(200, routed.status(), routed.body());
      JsonObject message = routed.json().getJsonArray("choices").getJsonObject(0).getJsonObject("message");
      assertTrue(message.containsKey(field), message.encode());
      assertNull(message.getValue(field));
      assertFalse(message.containsKey(other), message.encode());
      assertEquals(NonStreamingFidelityTest.comparable(direct.json()), NonStreamingFidelityTest.comparable(routed.json()));
      assertEquals(NonStreamingFidelityTest.comparable(direct.json()).toString(),
          NonStreamingFidelityTest.comparable(routed.json()).toString(), "the same bytes, field order included");
    } finally {
      h.close();
    }
  }
}
