package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two base models whose engines list a LoRA adapter of the same name (docs/operations.md#several-models): a request
 * naming it may be placed on either model's engines, but its KV handoff never crosses models: the decode runs on an
 * engine of the producer's base model.
 */
class SharedAdapterNameTest {
  static final String MODEL_B = "other/model-b";
  static final String ADAPTER = "sql-lora";
  private static final UnaryOperator<JsonObject> FLEET = json -> {
    for (Object o : json.getJsonArray("engines")) {
      JsonObject engine = (JsonObject) o;
      if (engine.getString("iid").endsWith("B0")) engine.put("model", MODEL_B);
    }
    return json;
  };
  private static final BiConsumer<String, SimEngineOptions> SIMS = (iid, options) -> {
    if (iid.endsWith("B0")) options.setModel(MODEL_B);
    options.setLoraModules(Map.of(ADAPTER, "/adapters/" + iid));
  };

  private static RouterHarness h;

  @BeforeAll
  static void fleet() throws Exception {
    // the engines in this order: the first prefill and the first decode placement pick engines of different models
    h = RouterHarness.start(List.of("PA0:prefill", "PB0:prefill", "DB0:decode", "DA0:decode"), FLEET, SIMS);
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (!listed().containsAll(Set.of(RouterHarness.MODEL, MODEL_B, ADAPTER))) {
      if (System.nanoTime() > deadline) throw new AssertionError("/v1/models never listed the adapter: " + listed());
      Thread.sleep(20);
    }
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  private static Set<String> listed() {
    Set<String> ids = new HashSet<>();
    h.get("/v1/models").json().getJsonArray("data").forEach(o -> ids.add(((JsonObject) o).getString("id")));
    return ids;
  }

  @Test
  void aHandoffOfAnAdapterListedByTwoBaseModelsNeverCrossesModels() throws Exception {
    for (int i = 0; i < 6; i++) {
      RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("model", ADAPTER)
          .put("prompt", "The narwhal swims under the arctic ice").put("max_tokens", 4).put("stream", i % 2 == 0));
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = h.journalRow(reply.requestId());
      String producer = row.getString("prefill_iid");
      String consumer = row.getString("decode_iid");
      assertTrue(producer.substring(1).equals(consumer.substring(1)),
          "the decode of a handoff runs on an engine of the producer's model: " + producer + " -> " + consumer);
    }
  }

  @Test
  void aBaseModelRequestStillTakesOnlyItsOwnEngines() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/chat/completions", new JsonObject().put("model", MODEL_B).put("max_tokens", 3)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hello"))));
    assertEquals(200, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("PB0", row.getString("prefill_iid"));
    assertEquals("DB0", row.getString("decode_iid"));
  }
}
