package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** engine-sim's embeddings, detokenize and responses in vLLM's shapes (docs/simulator.md#endpoints-that-run-whole). */
@ExtendWith(VertxExtension.class)
class WholeRoutesTest {
  private SimEngine engine;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    engine = SimEngine.start(vertx, new SimEngineOptions().setName("w1")).await();
    http = new SimClient(vertx);
  }

  @Test
  void embeddingsAreUnitVectorsInVllmsShapeAsFloatsOrBase64() {
    JsonObject body = http.post(engine, "/v1/embeddings", new JsonObject().put("input", new JsonArray().add("a b").add("c"))).json();
    assertEquals("list", body.getString("object"));
    assertTrue(body.getString("id").startsWith("embd-"));
    JsonArray vector = body.getJsonArray("data").getJsonObject(0).getJsonArray("embedding");
    double norm = 0;
    for (Object x : vector) norm += ((Number) x).doubleValue() * ((Number) x).doubleValue();
    assertEquals(1.0, norm, 1e-9);
    assertEquals(new JsonObject().put("prompt_tokens", 3).put("total_tokens", 3).put("completion_tokens", 0)
        .put("prompt_tokens_details", null), body.getJsonObject("usage"));
    String base64 = http.post(engine, "/v1/embeddings", new JsonObject().put("input", "a b").put("encoding_format", "base64"))
        .json().getJsonArray("data").getJsonObject(0).getString("embedding");
    java.nio.ByteBuffer bytes = java.nio.ByteBuffer.wrap(java.util.Base64.getDecoder().decode(base64)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    assertEquals(vector.getDouble(0).floatValue(), bytes.getFloat());
  }

  @Test
  void detokenizeGivesBackWhatTokenizeGave() {
    JsonArray tokens = http.post(engine, "/tokenize", new JsonObject().put("prompt", "the narwhal swims")).json().getJsonArray("tokens");
    assertEquals(new JsonObject().put("prompt", "the narwhal swims"),
        http.post(engine, "/detokenize", new JsonObject().put("tokens", tokens)).json());
  }

  @Test
  void aResponseIsKeptAndContinuedAndAnUnknownIdIsVllmsNotFound() {
    JsonObject first = http.post(engine, "/v1/responses", new JsonObject().put("input", "hello").put("max_output_tokens", 5)).json();
    assertEquals("response", first.getString("object"));
    assertEquals("completed", first.getString("status"));
    String text = first.getJsonArray("output").getJsonObject(0).getJsonArray("content").getJsonObject(0).getString("text");
    assertEquals(Generator.generate("hello", 0, 1.0, 5, false).text(), text);
    JsonObject next = http.post(engine, "/v1/responses", new JsonObject().put("input", "more")
        .put("previous_response_id", first.getString("id")).put("max_output_tokens", 5)).json();
    assertEquals(first.getString("id"), next.getString("previous_response_id"));
    assertEquals(Generator.generate("hello" + text + "\nmore", 0, 1.0, 5, false).text(),
        next.getJsonArray("output").getJsonObject(0).getJsonArray("content").getJsonObject(0).getString("text"));
    assertNotEquals(first.getString("id"), next.getString("id"));

    SimClient.Reply unknown = http.post(engine, "/v1/responses", new JsonObject().put("input", "x").put("previous_response_id", "resp_x"));
    assertEquals(404, unknown.status);
    assertEquals(new JsonObject().put("message", "Response with id 'resp_x' not found.").put("type", "invalid_request_error")
        .put("param", "response_id").put("code", 404), unknown.json().getJsonObject("error"));
  }

  @Test
  void aStoredResponseIsReadAndACancelOfASynchronousOneIsVllmsRefusal() {
    JsonObject created = http.post(engine, "/v1/responses", new JsonObject().put("input", "keep").put("max_output_tokens", 3)).json();
    String id = created.getString("id");
    SimClient.Reply read = http.get(engine, "/v1/responses/" + id);
    assertEquals(200, read.status);
    assertEquals(created, read.json());
    SimClient.Reply cancel = http.post(engine, "/v1/responses/" + id + "/cancel", (JsonObject) null);
    assertEquals(400, cancel.status);
    assertEquals("Cannot cancel a synchronous response.", cancel.json().getJsonObject("error").getString("message"));
    assertEquals("invalid_request_error", cancel.json().getJsonObject("error").getString("type"));
    assertEquals(404, http.get(engine, "/v1/responses/resp_x").status);
    assertEquals(404, http.post(engine, "/v1/responses/resp_x/cancel", (JsonObject) null).status);
  }

  @Test
  void faultRulesApplyAsToADecode() {
    engine.faults().add(new JsonObject().put("kind", "close_before_done").put("after", 1).put("phase", "decode"));
    SimClient.Reply cut = http.post(engine, "/v1/responses", new JsonObject().put("input", "x y").put("max_output_tokens", 4)
        .put("stream", true));
    assertEquals(200, cut.status);
    assertEquals(1, cut.text.lines().filter(l -> l.equals("event: response.output_text.delta")).count(), cut.text);
    assertTrue(!cut.text.contains("response.completed"), cut.text);

    engine.faults().add(new JsonObject().put("kind", "reset").put("phase", "decode"));
    SimClient.Reply reset = http.post(engine, "/v1/embeddings", new JsonObject().put("input", "x"));
    assertEquals(0, reset.status, "the connection closed before any answer");

    engine.faults().add(new JsonObject().put("kind", "queue_full").put("phase", "decode"));
    assertEquals(503, http.post(engine, "/detokenize", new JsonObject().put("tokens", new JsonArray().add(1))).status);
    assertEquals("close_before_done", engine.requests().get(0).getString("fault"));
    assertEquals(200, http.post(engine, "/v1/embeddings", new JsonObject().put("input", "x")).status, "the rules are spent");
  }
}
