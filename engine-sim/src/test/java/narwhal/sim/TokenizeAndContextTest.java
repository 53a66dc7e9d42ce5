package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * vLLM's {@code POST /tokenize} (completions and chat forms) counts what a completion of the same prompt is checked
 * with, and the context-length refusals carry vLLM 0.29's words, {@code param} and the lax integers pydantic accepts.
 */
@ExtendWith(VertxExtension.class)
class TokenizeAndContextTest {
  private SimEngine engine;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    engine = SimEngine.start(vertx, new SimEngineOptions().setName("t1").setMaxModelLen(16)).await();
    http = new SimClient(vertx);
  }

  @Test
  void tokenizeAnswersInVllmsShape() {
    SimClient.Reply r = http.post(engine, "/tokenize", new JsonObject().put("model", SimEngineOptions.DEFAULT_MODEL)
      .put("prompt", "the cat sat"));
    assertEquals(200, r.status, r.text);
    JsonObject body = r.json();
    assertEquals(3, body.getInteger("count"));
    assertEquals(16, body.getInteger("max_model_len"));
    assertEquals(3, body.getJsonArray("tokens").size());
    assertEquals(TokenizeRoute.tokenId("cat"), body.getJsonArray("tokens").getInteger(1));
    assertEquals(true, body.containsKey("token_strs"));
    assertNull(body.getValue("token_strs"));
    JsonObject strs = http.post(engine, "/tokenize", new JsonObject().put("prompt", "a b").put("return_token_strs", true)).json();
    assertEquals(new JsonArray().add("a").add("b"), strs.getJsonArray("token_strs"));
  }

  @Test
  void chatTokenizeAppliesTheChatTemplateAsCompletionsDo() {
    JsonArray messages = new JsonArray().add(new JsonObject().put("role", "system").put("content", "be brief"))
      .add(new JsonObject().put("role", "user").put("content", "hello there"));
    int counted = http.post(engine, "/tokenize", new JsonObject().put("messages", messages)).json().getInteger("count");
    JsonObject answer = http.post(engine, "/v1/chat/completions", new JsonObject().put("messages", messages).put("max_tokens", 1)).json();
    assertEquals(answer.getJsonObject("usage").getInteger("prompt_tokens"), counted);
    assertEquals(6, counted);
  }

  @Test
  void tokenizeRefusesAnotherModelAndANonStringPrompt() {
    assertEquals(404, http.post(engine, "/tokenize", new JsonObject().put("model", "other").put("prompt", "x")).status);
    SimClient.Reply bad = http.post(engine, "/tokenize", new JsonObject().put("prompt", 7));
    assertEquals(400, bad.status);
    assertEquals("BadRequestError", bad.json().getJsonObject("error").getString("type"));
  }

  @Test
  void outputLimitAboveTheContextAndTokenPromptsUseVllmsWords() {
    JsonObject tooMany = http.post(engine, "/v1/completions", SimClient.completion("x").put("max_tokens", 17)).json().getJsonObject("error");
    assertEquals("max_tokens=17 cannot be greater than max_model_len=max_total_tokens=16. Please request fewer output tokens. "
      + "(parameter=max_tokens, value=17)", tooMany.getString("message"));
    assertEquals("max_tokens", tooMany.getString("param"));
    JsonObject ids = http.post(engine, "/v1/completions", new JsonObject().put("prompt", new JsonArray().add(1).add(2).add(3))
      .put("max_tokens", 14)).json().getJsonObject("error");
    assertEquals("This model's maximum context length is 16 tokens. However, you requested 14 output tokens and your prompt "
      + "contains 3 input tokens, for a total of 17 tokens. Please reduce the length of the input prompt or the number of "
      + "requested output tokens. (parameter=input_tokens, value=3)", ids.getString("message"));
  }

  /** A chat without an output limit gets what the context leaves: none when the prompt fills it, which vLLM refuses. */
  @Test
  void aChatPromptFillingTheContextWithoutALimitIsRefusedAsVllmDoes() {
    // the template renders "user: <words>", one token more than the words
    JsonObject full = new JsonObject().put("messages", new JsonArray().add(new JsonObject().put("role", "user")
      .put("content", "a b c d e f g h i j k l m n o")));
    SimClient.Reply refused = http.post(engine, "/v1/chat/completions", full);
    assertEquals(400, refused.status, refused.text);
    assertEquals("max_tokens must be at least 1, got 0.", refused.json().getJsonObject("error").getString("message"));
    assertEquals("max_tokens", refused.json().getJsonObject("error").getString("param"));
    JsonObject fits = new JsonObject().put("messages", new JsonArray().add(new JsonObject().put("role", "user")
      .put("content", "a b c d e f g h i j k l m n")));
    assertEquals(200, http.post(engine, "/v1/chat/completions", fits).status);
  }

  @Test
  void numericStringsAndIntegralFloatsAreIntegers() {
    assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion("a b").put("max_tokens", "3")).status);
    assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion("a b").put("max_tokens", 3.0)).status);
    assertEquals(400, http.post(engine, "/v1/completions", SimClient.completion("a b").put("max_tokens", 3.5)).status);
  }
}
