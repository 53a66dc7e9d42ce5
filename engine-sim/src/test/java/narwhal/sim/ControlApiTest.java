package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The /sim control API and the Java fault plan: adding, consuming, listing and clearing rules. */
@ExtendWith(VertxExtension.class)
class ControlApiTest {

  private Vertx vertx;
  private SimEngine engine;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    this.vertx = vertx;
    engine = SimEngine.start(vertx, new SimEngineOptions().setName("ctl")).await();
    http = new SimClient(vertx);
  }

  private int complete() {
    return http.post(engine, "/v1/completions", SimClient.completion("hello world")).status;
  }

  @Test
  void postedCountRulesApplyToTheNextNRequests() {
    SimClient.Reply added = http.post(engine, "/sim/faults",
      new JsonObject().put("kind", "status").put("status", 429).put("count", 2));
    assertEquals(200, added.status);
    JsonArray list = added.jsonArray();
    assertEquals(1, list.size());
    assertEquals("status", list.getJsonObject(0).getString("kind"));
    assertEquals(2, list.getJsonObject(0).getInteger("count"));
    assertEquals("any", list.getJsonObject(0).getString("phase"));

    assertEquals(429, complete());
    assertEquals(1, http.get(engine, "/sim/faults").jsonArray().getJsonObject(0).getInteger("count"));
    assertEquals(429, complete());
    assertEquals(new JsonArray(), http.get(engine, "/sim/faults").jsonArray());
    assertEquals(200, complete());
  }

  @Test
  void arraysAreAcceptedAndDeleteClearsEverything() {
    JsonArray rules = new JsonArray()
      .add(new JsonObject().put("kind", "status").put("status", 500).put("probability", 1.0))
      .add(new JsonObject().put("kind", "queue_full").put("phase", "prefill"));
    assertEquals(2, http.post(engine, "/sim/faults", rules).jsonArray().size());
    assertEquals(500, complete());
    assertEquals(500, complete());
    assertEquals(2, engine.faults().list().size());
    assertEquals(new JsonArray(), http.delete(engine, "/sim/faults").jsonArray());
    assertEquals(200, complete());
  }

  @Test
  void invalidRulesAre400AndNothingIsAdded() {
    assertEquals(400, http.post(engine, "/sim/faults", new JsonObject().put("kind", "meteor")).status);
    assertEquals(400, http.post(engine, "/sim/faults", new JsonObject().put("kind", "status").put("phase", "middle")).status);
    assertEquals(400, http.post(engine, "/sim/faults", new JsonObject().put("kind", "status").put("probability", 2)).status);
    assertEquals(400, http.post(engine, "/sim/faults",
      new JsonObject().put("kind", "descriptor_bad_block_ids").put("variant", "emoji")).status);
    assertEquals(400, http.post(engine, "/sim/faults",
      new JsonArray().add(new JsonObject().put("kind", "queue_full")).add(new JsonObject().put("kind", "nope"))).status);
    assertEquals(new JsonArray(), http.get(engine, "/sim/faults").jsonArray());
  }

  @Test
  void phaseRestrictedRulesWaitForTheirLeg() {
    engine.faults().add(FaultRule.of("queue_full").phase("prefill"));
    assertEquals(200, complete());
    assertEquals(1, engine.faults().list().size());
    SimClient.Reply prefill = http.post(engine, "/v1/completions", SimClient.prefillLeg(SimClient.completion("hello world")));
    assertEquals(503, prefill.status);
    assertTrue(engine.faults().list().isEmpty());
  }

  @Test
  void prefillOnlyKindsAreNotConsumedByDecodes() {
    engine.faults().add(new JsonObject().put("kind", "descriptor_missing"));
    engine.faults().add(new JsonObject().put("kind", "kv_transfer_fail"));
    assertEquals(200, complete());
    assertEquals(2, engine.faults().list().size());
  }

  @Test
  void probabilityZeroNeverFires() {
    engine.faults().add(FaultRule.of("status").param("status", 500).probability(0));
    for (int i = 0; i < 5; i++) {
      assertEquals(200, complete());
    }
    engine.faults().clear();
    assertTrue(engine.faults().list().isEmpty());
  }

  @Test
  void faultsFromOptionsAreActiveAtStart() {
    SimEngine configured = SimEngine.start(vertx, new SimEngineOptions().setName("cfg")
      .addFault(new JsonObject().put("kind", "status").put("status", 504).put("phase", "decode"))
      .addFault(new JsonObject().put("kind", "health_503"))).await();
    assertEquals(503, http.get(configured, "/health").status);
    assertEquals(504, http.post(configured, "/v1/completions", SimClient.completion("x")).status);
    assertEquals(200, http.post(configured, "/v1/completions", SimClient.completion("x")).status);
  }

  @Test
  void invalidOptionsFailTheStart() {
    Throwable err = assertThrows(IllegalArgumentException.class,
      () -> SimEngine.start(vertx, new SimEngineOptions().setRole("oracle")).await());
    assertTrue(err.getMessage().contains("role"));
    assertThrows(IllegalArgumentException.class,
      () -> SimEngine.start(vertx, new SimEngineOptions().addFault(new JsonObject().put("kind", "nope"))).await());
  }

  @Test
  void requestLogAndStatsOverHttp() {
    http.post(engine, "/v1/completions", SimClient.completion("a b c").put("max_tokens", 2), "x-request-id", "q1");
    JsonArray log = http.get(engine, "/sim/requests").jsonArray();
    assertEquals(1, log.size());
    assertEquals("q1", log.getJsonObject(0).getString("request_id"));
    assertEquals("a b c", log.getJsonObject(0).getJsonObject("body").getString("prompt"));
    assertEquals(engine.requests().get(0), log.getJsonObject(0));

    JsonObject stats = http.get(engine, "/sim/stats").json();
    assertEquals(1, stats.getInteger("requests"));
    assertEquals(3, stats.getInteger("prompt_tokens"));
    assertEquals(2, stats.getInteger("generation_tokens"));
    for (String key : List.of("handoffs_held", "handoffs_freed", "handoffs_expired", "kv_transferred", "kv_recomputed",
      "kv_transfer_failed", "blocks_in_use")) {
      assertEquals(0, stats.getInteger(key), key);
    }

    assertEquals(200, http.delete(engine, "/sim/requests").status);
    assertTrue(engine.requests().isEmpty());
  }

  @Test
  void faultRuleParsingAndJson() {
    FaultRule rule = FaultRule.parse("close_before_done;after=3;phase=decode;count=2");
    assertEquals("close_before_done", rule.kind());
    assertEquals("decode", rule.phase());
    assertEquals(2, rule.count());
    assertEquals(3, rule.params().getInteger("after"));
    assertEquals(new JsonObject().put("kind", "close_before_done").put("phase", "decode").put("count", 2).put("after", 3),
      rule.toJson());
    assertEquals(rule.toJson(), new FaultRule(rule.toJson()).toJson());
    assertEquals("mooncake", FaultRule.parse("descriptor_foreign_connector;variant=mooncake").params().getString("variant"));
    assertThrows(IllegalArgumentException.class, () -> FaultRule.parse("reset;after"));
    assertThrows(IllegalArgumentException.class, () -> FaultRule.parse("status;status=700"));
  }

  @Test
  void optionsRoundTripThroughJson() {
    SimEngineOptions options = new SimEngineOptions().setName("n").setRole("decode").setBlockSize(32).setTtftBaseMs(1.5)
      .setFlatBlockIds(true).setKvLoadFailurePolicy("fail").addFault(new JsonObject().put("kind", "queue_full"));
    SimEngineOptions copy = new SimEngineOptions(options.toJson());
    assertEquals(options.toJson(), copy.toJson());
    assertEquals(64, new SimEngineOptions(new JsonObject().put("block_size", 64)).getBlockSize());
    assertEquals(SimEngineOptions.DEFAULT_TOTAL_BLOCKS, new SimEngineOptions().getTotalBlocks());
  }

  @Test
  void statsCountTheReadsOfEachPathARouterPolls() {
    for (int i = 0; i < 2; i++) {
      assertEquals(200, http.get(engine, "/metrics").status);
    }
    assertEquals(200, http.get(engine, "/health").status);
    for (int i = 0; i < 3; i++) {
      assertEquals(200, http.get(engine, "/v1/models").status);
    }
    assertEquals(200, http.get(engine, "/ping").status);
    complete();

    JsonObject reads = http.get(engine, "/sim/stats").json().getJsonObject("reads");
    assertEquals(new JsonObject().put("metrics", 2).put("health", 1).put("models", 3),
      new JsonObject().put("metrics", reads.getValue("metrics")).put("health", reads.getValue("health")).put("models", reads.getValue("models")));
    assertEquals(2, reads.getLong("metrics_since_mark"), "no mark yet: every read since start");
  }

  @Test
  void aMarkStartsAWindowOfMetricsReadsWhoseLongestGapCountsAGapEndingInItWhole() throws InterruptedException {
    assertEquals(200, http.get(engine, "/metrics").status);
    Thread.sleep(300);
    JsonObject marked = http.post(engine, "/sim/stats/mark", new JsonObject()).json().getJsonObject("reads");
    assertEquals(0, marked.getLong("metrics_since_mark"));
    assertEquals(0, marked.getLong("metrics_longest_gap_ms"));
    assertTrue(marked.getLong("metrics_unread_ms") >= 300, "unread since the read before the mark: " + marked);
    assertEquals(200, http.get(engine, "/metrics").status);
    assertEquals(200, http.get(engine, "/metrics").status);
    JsonObject reads = http.get(engine, "/sim/stats").json().getJsonObject("reads");
    assertEquals(2, reads.getLong("metrics_since_mark"));
    assertEquals(3, reads.getLong("metrics"));
    assertTrue(reads.getLong("metrics_longest_gap_ms") >= 300, "the gap that ended after the mark counts whole: " + reads);
    engine.markMetricsReads();
    assertEquals(0, engine.stats().getJsonObject("reads").getLong("metrics_longest_gap_ms"));
  }

  @Test
  void readsAnsweredWithAnErrorCountToo() {
    SimEngine keyed = SimEngine.start(vertx, new SimEngineOptions().setName("keyed").setApiKey("sekret")
      .addFault(new JsonObject().put("kind", "health_503"))).await();
    assertEquals(401, http.get(keyed, "/v1/models").status);
    assertEquals(503, http.get(keyed, "/health").status);

    JsonObject reads = keyed.stats().getJsonObject("reads");
    assertEquals(new JsonObject().put("metrics", 0).put("health", 1).put("models", 1),
      new JsonObject().put("metrics", reads.getValue("metrics")).put("health", reads.getValue("health")).put("models", reads.getValue("models")));
    assertNull(reads.getValue("metrics_unread_ms"), "never read");
  }
}
