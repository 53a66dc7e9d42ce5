package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Issue 26 item 5: an engine's 4xx reaches the client as the engine sent it (status, type, param, message, code);
 * the router's own refusals use vLLM's types; numbers vLLM's validation coerces are accepted.
 */
@Timeout(60)
class EngineErrorPassThroughTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @Test
  void anEnginesValidationErrorIsPassedThroughAsSent() {
    JsonObject completion = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hello").put("logprobs", 25);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", completion);
    assertEquals(400, direct.status());
    assertEquals("logprobs", direct.error().getString("param"));
    RouterHarness.Reply routed = h.post("/v1/completions", completion);
    assertEquals(400, routed.status());
    assertEquals(direct.json(), routed.json());
    JsonObject chat = new JsonObject().put("model", RouterHarness.MODEL)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))).put("top_logprobs", 3);
    RouterHarness.Reply chatDirect = h.direct(h.engine("D0"), "/v1/chat/completions", chat);
    assertEquals(chatDirect.json(), h.post("/v1/chat/completions", chat).json());
    assertEquals("top_logprobs", chatDirect.error().getString("param"));
  }

  @Test
  void aWholeEndpointsEngineRefusalReachesTheClientWithoutEngineAddresses() throws Exception {
    java.net.URI engine = java.net.URI.create(h.engine("D0").url());
    String hostPort = engine.getHost() + ":" + engine.getPort();
    String words = "tokenizer of " + h.engine("D0").url() + "/v1/embeddings refused (remote " + hostPort + ")";
    h.engine("D0").faults().add(new JsonObject().put("kind", "status").put("status", 400).put("phase", "decode").put("count", 1)
        .put("message", words).put("type", "BadRequestError"));
    RouterHarness.Reply reply = h.post("/v1/embeddings", new JsonObject().put("model", RouterHarness.MODEL).put("input", "hi"));
    assertEquals(400, reply.status(), reply.body());
    assertEquals(new JsonObject().put("error", new JsonObject().put("message", "tokenizer of <engine> refused (remote <engine>)")
        .put("type", "BadRequestError").put("param", null).put("code", 400)), reply.json(), "as sent, without engine addresses");
    org.junit.jupiter.api.Assertions.assertFalse(reply.body().contains(hostPort), reply.body());
  }

  @Test
  void numericStringsAndIntegralFloatsAreTakenAsVllmTakesThem() {
    JsonObject eight = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "count the stars").put("max_tokens", 8)
        .put("ignore_eos", true);
    String expected = h.post("/v1/completions", eight).json().getJsonArray("choices").getJsonObject(0).getString("text");
    for (Object value : new Object[] {"8", 8.0}) {
      RouterHarness.Reply reply = h.post("/v1/completions", eight.copy().put("max_tokens", value).put("n", value instanceof String ? "1" : 1.0));
      assertEquals(200, reply.status(), value + ": " + reply.body());
      assertEquals(expected, reply.json().getJsonArray("choices").getJsonObject(0).getString("text"));
    }
    // pydantic's lax mode also takes a boolean as 1 (or 1.0), a zero fraction and underscores in a numeric string
    for (Object value : new Object[] {"8.0", " +8 ", "0_8", "8.000"}) {
      JsonObject body = eight.copy().put("max_tokens", value).put("n", true).put("temperature", true);
      RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", body);
      assertEquals(200, direct.status(), value + " (the engine): " + direct.body());
      RouterHarness.Reply reply = h.post("/v1/completions", body);
      assertEquals(200, reply.status(), value + ": " + reply.body());
      assertEquals(expected, reply.json().getJsonArray("choices").getJsonObject(0).getString("text"), String.valueOf(value));
    }
    RouterHarness.Reply one = h.post("/v1/completions", eight.copy().put("max_tokens", true));
    assertEquals(200, one.status(), one.body());
    assertEquals(1, one.json().getJsonObject("usage").getInteger("completion_tokens"), one.body());
    RouterHarness.Reply fractional = h.post("/v1/completions", eight.copy().put("max_tokens", 8.5));
    assertEquals(400, fractional.status());
    assertEquals("BadRequestError", fractional.error().getString("type"));
    assertEquals("max_tokens", fractional.error().getString("param"));
  }

  @Test
  void theRoutersOwnRefusalsUseVllmsTypes() {
    RouterHarness.Reply model = h.post("/v1/completions", new JsonObject().put("model", "gpt-9").put("prompt", "x"));
    assertEquals(h.direct(h.engine("D0"), "/v1/completions", new JsonObject().put("model", "gpt-9").put("prompt", "x")).json(),
        model.json());
    RouterHarness.Reply options = h.post("/v1/completions", new JsonObject().put("prompt", "x").put("stream_options", new JsonObject()));
    assertEquals("BadRequestError", options.error().getString("type"));
    assertEquals("Stream options can only be defined when `stream=True`.", options.error().getString("message"));
  }
}
