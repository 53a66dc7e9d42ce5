package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One router in front of two models and a LoRA adapter (docs/operations.md#several-models), on real simulated engines:
 * model A ({@link RouterHarness#MODEL}) on PA0, PA1, DA0, DA1, of which PA0 and DA0 also serve the adapter; model B on
 * PB0 and DB0. Each request lands only on engines of what it names, both legs; {@code /v1/models} is what serving
 * engines list; a model without a decode engine is unavailable alone; a reload adds a third model.
 */
class SeveralModelsTest {
  static final String MODEL_B = "other/model-b";
  static final String ADAPTER = "sql-lora";
  static final int MODEL_B_CONTEXT = 1024;
  private static final UnaryOperator<JsonObject> FLEET = json -> {
    for (Object o : json.getJsonArray("engines")) {
      JsonObject engine = (JsonObject) o;
      if (engine.getString("iid").endsWith("B0")) engine.put("model", MODEL_B);
    }
    return json.put("recovery", new JsonObject().put("monitor_interval_s", 0.05).put("readmit_every", 2)
        .put("liveness_every", 100000));
  };
  private static final BiConsumer<String, SimEngineOptions> SIMS = (iid, options) -> {
    if (iid.endsWith("B0")) options.setModel(MODEL_B).setMaxModelLen(MODEL_B_CONTEXT);
    if (iid.endsWith("A0")) options.setLoraModules(Map.of(ADAPTER, "/adapters/sql"));
  };

  private static RouterHarness h;

  @BeforeEach
  void fleet() throws Exception {
    h = RouterHarness.start(List.of("PA0:prefill", "PA1:prefill", "DA0:decode", "DA1:decode", "PB0:prefill", "DB0:decode"),
        FLEET, SIMS);
    awaitModels(ids -> ids.containsAll(Set.of(RouterHarness.MODEL, MODEL_B, ADAPTER)));
    h.resetEngines();
  }

  @AfterEach
  void stop() throws Exception {
    h.close();
  }

  @Test
  void eachRequestLandsOnlyOnEnginesOfTheModelItNamesBothLegs() {
    assertEquals(200, h.get("/ready?models=all").status(), "every phase of every model has a serving engine");
    for (int i = 0; i < 6; i++) {
      for (String model : List.of(RouterHarness.MODEL, MODEL_B, ADAPTER)) {
        RouterHarness.Reply reply = h.post("/v1/completions", completion(model, i % 2 == 0));
        assertEquals(200, reply.status(), model + ": " + reply.body());
        if (i % 2 == 1) assertEquals(model, reply.json().getString("model"));
      }
    }
    Map<String, Integer> a = modelsSeenBy("PA0", "PA1", "DA0", "DA1");
    assertEquals(Map.of(RouterHarness.MODEL, 12, ADAPTER, 12), a, "model A and its adapter only on model A's engines");
    assertEquals(12, modelsSeenBy("PA0", "DA0").get(ADAPTER), "the adapter only on the engines listing it, both legs");
    assertNull(modelsSeenBy("PA1", "DA1").get(ADAPTER), "engines without the adapter never get it");
    assertTrue(modelsSeenBy("PA1", "DA1").get(RouterHarness.MODEL) > 0, "the base model also on the engines without it");
    assertEquals(Map.of(MODEL_B, 12), modelsSeenBy("PB0", "DB0"), "model B only on its engines");
  }

  @Test
  void v1ModelsIsTheUnionOfWhatServingEnginesListInVllmsShape() {
    JsonArray data = h.get("/v1/models").json().getJsonArray("data");
    Map<String, JsonObject> byId = new HashMap<>();
    data.forEach(o -> byId.put(((JsonObject) o).getString("id"), (JsonObject) o));
    assertEquals(3, data.size(), "each id once: " + data.encode());
    assertEquals(Set.of(RouterHarness.MODEL, MODEL_B, ADAPTER), byId.keySet());
    JsonObject adapter = byId.get(ADAPTER);
    assertEquals(RouterHarness.MODEL, adapter.getString("parent"));
    assertEquals("/adapters/sql", adapter.getString("root"));
    JsonObject base = byId.get(MODEL_B);
    assertEquals("model", base.getString("object"));
    assertEquals("vllm", base.getString("owned_by"));
    assertNull(base.getValue("parent"));
    assertTrue(base.getValue("max_model_len") instanceof Number, base.encode());
    assertTrue(base.getValue("created") instanceof Number, base.encode());

    h.admin("eject", new JsonObject().put("iid", "PA0"));
    h.admin("eject", new JsonObject().put("iid", "DA0"));
    h.placementSettled();
    Set<String> ids = ids(h.get("/v1/models").json().getJsonArray("data"));
    assertEquals(Set.of(RouterHarness.MODEL, MODEL_B), ids, "ejected engines contribute nothing");
  }

  @Test
  void anAdapterWhoseDecodeEnginesAreOutIsRefusedNamingItWhileItsBaseServes() {
    h.admin("eject", new JsonObject().put("iid", "DA0"));
    RouterHarness.Reply refused = h.post("/v1/completions", completion(ADAPTER, false));
    assertEquals(503, refused.status(), refused.body());
    assertEquals("no_schedulable_engines", refused.error().getString("type"));
    assertEquals("Engine capacity is unavailable for model `" + ADAPTER + "`", refused.error().getString("message"));
    assertTrue(h.engine("PA0").requests().isEmpty(), "no prefill runs when no engine could decode the adapter");
    assertEquals(200, h.post("/v1/completions", completion(RouterHarness.MODEL, false)).status());
  }

  @Test
  void aModelWithoutADecodeEngineIsUnavailableAloneAndTheRouterStaysReady() {
    h.admin("eject", new JsonObject().put("iid", "DB0").put("force", true));
    RouterHarness.Reply refused = h.post("/v1/chat/completions", new JsonObject().put("model", MODEL_B)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
    assertEquals(503, refused.status(), refused.body());
    assertEquals("no_schedulable_engines", refused.error().getString("type"));
    assertEquals("Engine capacity is unavailable for model `" + MODEL_B + "`", refused.error().getString("message"));
    assertTrue(h.engine("PB0").requests().isEmpty(), "no prefill of model B ran");
    assertEquals(200, h.post("/v1/completions", completion(RouterHarness.MODEL, true)).status(), "model A keeps serving");
    assertEquals(200, h.get("/ready").status(), "the router stays ready while one of its models serves");
    RouterHarness.Reply everyModel = h.get("/ready?models=all");
    assertEquals(503, everyModel.status(), "the start gate asks every model: " + everyModel.body());
    assertEquals("no serving engine can take the decode phase of model " + MODEL_B, everyModel.json().getString("reason"));
    RouterHarness.Reply odd = h.get("/ready?models=some");
    assertEquals(400, odd.status());
    assertTrue(odd.json().getString("reason").startsWith("query parameter models: expected \"all\""), odd.body());
    JsonObject models = h.get("/narwhal/state").json().getJsonObject("models");
    assertEquals(true, models.getJsonObject(RouterHarness.MODEL).getBoolean("ready"));
    assertFalse(models.getJsonObject(MODEL_B).getBoolean("ready"));
    assertEquals("no serving engine can take the decode phase of model " + MODEL_B,
        models.getJsonObject(MODEL_B).getString("reason"));
  }

  @Test
  void aRefusalForWantOfAnEngineIsCountedUnderItsModel() {
    String metrics = h.get("/metrics").body();
    assertTrue(metrics.contains("narwhal_rejected_total{model=\"" + MODEL_B + "\",reason=\"no_engine\"} 0.0"), "at zero from start");
    h.admin("eject", new JsonObject().put("iid", "DB0").put("force", true));
    assertEquals(503, h.post("/v1/completions", completion(MODEL_B, false)).status());
    metrics = h.get("/metrics").body();
    assertTrue(metrics.contains("narwhal_rejected_total{model=\"" + MODEL_B + "\",reason=\"no_engine\"} 1.0"), metrics);
    assertTrue(metrics.contains("narwhal_rejected_total{model=\"" + RouterHarness.MODEL + "\",reason=\"no_engine\"} 0.0"), metrics);
    assertFalse(metrics.contains("narwhal_rejected_total{model=\"\",reason=\"no_engine\"}"), "every no_engine refusal names its model");
  }

  @Test
  void theLastDecodeEngineOfAModelIsKeptForItsModelAlone() {
    Object refused = h.admin("eject", new JsonObject().put("iid", "DB0"), RouterHarness.ADMIN_TOKEN);
    assertEquals("eject DB0 refused: it is the last serving engine of model " + MODEL_B + " that can take the decode phase, "
        + "so every request for it would fail; repeat with --force to do it anyway", ((Throwable) refused).getMessage());
    h.admin("eject", new JsonObject().put("iid", "DA0"));
    assertEquals("ejected", AdminAndPlacementTest.engineState(h, "DA0"), "model A still has DA1");
  }

  @Test
  void eachModelIsCheckedAgainstItsOwnEnginesContext() {
    for (String model : List.of(RouterHarness.MODEL, ADAPTER)) {
      RouterHarness.Reply fits = h.post("/v1/completions", completion(model, false).put("max_tokens", 2000));
      assertEquals(200, fits.status(), model + " has a context of " + SimEngineOptions.DEFAULT_MAX_MODEL_LEN + ": " + fits.body());
    }
    RouterHarness.Reply refused = h.post("/v1/completions", completion(MODEL_B, false).put("max_tokens", 2000));
    assertEquals(400, refused.status(), refused.body());
    assertEquals("max_tokens=2000 cannot be greater than max_model_len=max_total_tokens=" + MODEL_B_CONTEXT
        + ". Please request fewer output tokens. (parameter=max_tokens, value=2000)", refused.error().getString("message"));
    assertTrue(modelsSeenBy("PB0", "DB0").isEmpty(), "model B's engines were not asked");
    JsonObject models = h.get("/narwhal/state").json().getJsonObject("models");
    assertEquals(MODEL_B_CONTEXT, models.getJsonObject(MODEL_B).getInteger("max_model_len"));
    assertEquals(SimEngineOptions.DEFAULT_MAX_MODEL_LEN, models.getJsonObject(RouterHarness.MODEL).getInteger("max_model_len"));
  }

  @Test
  void anAdapterTheEngineNoLongerHasIsVllmsOwn404AndNoEvidenceAgainstTheEngine() {
    String missing = "The model `" + ADAPTER + "` does not exist.";
    h.engine("DA0").faults().add(new JsonObject().put("kind", "status").put("status", 404).put("message", missing)
        .put("type", "NotFoundError").put("model", ADAPTER).put("phase", "decode").put("count", 3));
    RouterHarness.Reply reply = h.post("/v1/completions", completion(ADAPTER, false));
    assertEquals(404, reply.status(), reply.body());
    assertEquals(missing, reply.error().getString("message"));
    assertEquals("NotFoundError", reply.error().getString("type"));
    h.placementSettled();
    assertEquals("serving", AdminAndPlacementTest.engineState(h, "DA0"), "the engine still serves its base model");
    for (int i = 0; i < 4; i++) {
      assertEquals(200, h.post("/v1/completions", completion(RouterHarness.MODEL, false)).status());
    }
    assertTrue(modelsSeenBy("DA0").containsKey(RouterHarness.MODEL), "the base model still decodes on DA0");

    RouterHarness.Reply next = h.post("/v1/completions", completion(ADAPTER, false));
    assertEquals(503, next.status(), "DA0, the adapter's only decode engine, no longer lists it: " + next.body());
    assertEquals("Engine capacity is unavailable for model `" + ADAPTER + "`", next.error().getString("message"));
    assertEquals(2, h.engine("DA0").faults().list().get(0).count(), "placement did not send the adapter to DA0 again");
  }

  @Test
  void aModelNoEngineServesIsNotFound() {
    RouterHarness.Reply reply = h.post("/v1/completions", completion("no/such-model", false));
    assertEquals(404, reply.status(), reply.body());
    assertEquals("The model `no/such-model` does not exist.", reply.error().getString("message"));
    h.engines.values().forEach(e -> assertTrue(e.requests().isEmpty(), "no engine was asked"));
  }

  @Test
  void perModelSeriesAreLabelledWithTheAcceptedModelAndAMadeUpNameCreatesNone() throws Exception {
    String before = h.get("/metrics").body();
    for (String model : List.of(RouterHarness.MODEL, MODEL_B)) {
      assertTrue(before.contains("narwhal_tokens_total{kind=\"prompt\",model=\"" + model + "\"} 0.0"),
          "every configured model's series at zero from start: " + model);
    }
    assertFalse(before.contains("model=\"" + ADAPTER + "\""), "an adapter's series come with its first accepted request");
    for (String model : List.of(MODEL_B, ADAPTER)) {
      RouterHarness.Reply reply = h.post("/v1/completions", completion(model, false));
      assertEquals(200, reply.status(), reply.body());
      assertEquals(model, h.journalRow(reply.requestId()).getString("model"), "the journal row names the accepted model");
    }
    RouterHarness.Reply unknown = h.post("/v1/completions", completion("made/up-model", true));
    assertEquals(404, unknown.status(), unknown.body());
    assertNull(h.journalRow(unknown.requestId()).getValue("model"), "placement accepted no model");
    String after = h.get("/metrics").body();
    assertFalse(after.contains("made/up-model"), "a made-up name creates no series");
    for (String model : List.of(MODEL_B, ADAPTER)) {
      assertTrue(after.contains("narwhal_e2e_latency_seconds_count{model=\"" + model + "\"} 1"), model + ": " + after);
      assertTrue(after.contains("narwhal_prefill_leg_duration_seconds_count{model=\"" + model + "\"} 1"), model);
    }
    assertTrue(after.contains("narwhal_e2e_latency_seconds_count{model=\"" + RouterHarness.MODEL + "\"} 0"),
        "the adapter's request is not counted under its base model");
  }

  @Test
  void aReloadAddsAThirdModel() throws Exception {
    String modelC = "third/model-c";
    SimEngine c = RouterHarness.await(SimEngine.start(h.vertx, new SimEngineOptions().setName("BC0").setRole("both")
        .setModel(modelC).setPort(0).setSideChannelPort(0)));
    NarwhalConfig before = h.config;
    try {
      RouterHarness.Reply unknown = h.post("/v1/completions", completion(modelC, false));
      assertEquals(404, unknown.status(), unknown.body());
      JsonObject fleet = h.config.toJson();
      fleet.getJsonArray("engines").add(new JsonObject().put("iid", "BC0").put("url", c.url()).put("role", "both")
          .put("model", modelC));
      h.config = NarwhalConfig.fromJson(fleet);
      h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
      OperatorSafetyTest.awaitEvent(h, e -> "engine_state".equals(e.getString("event")) && "BC0".equals(e.getString("iid"))
          && "serving".equals(e.getString("to")));
      awaitModels(ids -> ids.contains(modelC));
      c.clearRequests();
      RouterHarness.Reply served = h.post("/v1/completions", completion(modelC, false));
      assertEquals(200, served.status(), served.body());
      assertEquals(modelC, served.json().getString("model"));
      assertEquals(Map.of(modelC, 2), modelsSeen(c), "both legs on the third model's engine");
      h.journalRow(served.requestId());
      assertTrue(h.get("/metrics").body().contains("narwhal_e2e_latency_seconds_count{model=\"" + modelC + "\"} 1"),
          "the third model's series");
      assertEquals(200, h.post("/v1/completions", completion(MODEL_B, false)).status());
    } finally {
      h.config = before;
      h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, before.toJson());
      RouterHarness.await(c.close());
    }
  }

  static JsonObject completion(String model, boolean stream) {
    return new JsonObject().put("model", model).put("prompt", "The narwhal swims under the arctic ice").put("max_tokens", 6)
        .put("stream", stream);
  }

  /** How many legs each named model brought to the engines, client requests only (not probes). */
  private static Map<String, Integer> modelsSeenBy(String... iids) {
    Map<String, Integer> seen = new HashMap<>();
    for (String iid : iids) modelsSeen(h.engine(iid)).forEach((m, n) -> seen.merge(m, n, Integer::sum));
    return seen;
  }

  private static Map<String, Integer> modelsSeen(SimEngine engine) {
    Map<String, Integer> seen = new HashMap<>();
    for (JsonObject r : engine.requests()) {
      String id = String.valueOf(r.getString("request_id"));
      if (id.startsWith("probe-") || !(r.getValue("body") instanceof JsonObject body) || r.getString("path").contains("tokenize")) continue;
      seen.merge(body.getString("model"), 1, Integer::sum);
    }
    return seen;
  }

  private static Set<String> ids(JsonArray data) {
    Set<String> ids = new HashSet<>();
    data.forEach(o -> ids.add(((JsonObject) o).getString("id")));
    return ids;
  }

  private static void awaitModels(java.util.function.Predicate<Set<String>> done) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    Set<String> ids = Set.of();
    while (System.nanoTime() < deadline) {
      ids = ids(h.get("/v1/models").json().getJsonArray("data"));
      if (done.test(ids)) return;
      Thread.sleep(20);
    }
    throw new AssertionError("/v1/models never held what was awaited: " + ids);
  }
}
