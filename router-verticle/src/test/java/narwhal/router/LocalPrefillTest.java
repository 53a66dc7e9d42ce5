package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code placement.local_prefill_max_tokens} through a router over real simulated engines (a producer, a consumer and
 * one {@code both} engine): a short prompt runs whole on the {@code both} engine with no remote prefill, and its answer
 * is the engine's own; a long one is disaggregated; the key hot-reloads; with the {@code both} engine out of placement
 * a short prompt is disaggregated.
 */
@Timeout(120)
class LocalPrefillTest {
  private static final List<String> FLEET = List.of("P0:prefill", "D0:decode", "B0:both");

  private static RouterHarness start(int maxTokens) throws Exception {
    return RouterHarness.start(FLEET, json -> json.put("placement", new JsonObject().put("policy", "least_reserved")
        .put("local_prefill_max_tokens", maxTokens)));
  }

  private static void reload(RouterHarness h, int maxTokens) {
    JsonObject json = h.config.toJson();
    json.getJsonObject("placement").put("local_prefill_max_tokens", maxTokens);
    h.config = NarwhalConfig.fromJson(json);
    h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
  }

  /** The engine's requests that ran a remote prefill (asked to hand their KV off). */
  private static long prefills(RouterHarness h, String iid) {
    return h.engine(iid).requests().stream().filter(r -> "prefill".equals(r.getString("phase"))).count();
  }

  private static void assertLocal(RouterHarness h, RouterHarness.Reply reply) throws Exception {
    assertEquals(200, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("B0", row.getString("prefill_iid"), row.encode());
    assertEquals("B0", row.getString("decode_iid"), row.encode());
    assertEquals("local", row.getString("prefill_placement"));
    assertEquals("local", row.getString("decode_placement"));
    assertEquals(false, row.getBoolean("crossed"));
    assertEquals(1, row.getInteger("attempts"));
    assertTrue(row.getDouble("ttft_s") != null && row.getDouble("ttft_s") <= row.getDouble("first_byte_s"), row.encode());
    List<JsonObject> seen = h.engine("B0").requests();
    assertEquals(1, seen.size(), "one leg, on the both engine: " + seen);
    assertFalse(seen.get(0).getJsonObject("body").containsKey("kv_transfer_params"), "no handoff: " + seen.get(0).encode());
    assertTrue(seen.get(0).getString("request_id").endsWith("-a1-local"), seen.get(0).encode());
    assertTrue(h.engine("P0").requests().isEmpty() && h.engine("D0").requests().isEmpty(), "no remote prefill, no other decode");
  }

  @Test
  void aShortPromptRunsWholeOnTheBothEngineAndItsAnswerIsTheEnginesOwn() throws Exception {
    try (RouterHarness h = start(64)) {
      JsonObject body = DisaggregatedExecutionTest.completion(false);
      RouterHarness.Reply reply = h.post("/v1/completions", body);
      assertLocal(h, reply);
      JsonObject own = h.direct(h.engine("B0"), "/v1/completions", body).json();
      assertEquals(own.getJsonArray("choices").getJsonObject(0).getString("text"),
          reply.json().getJsonArray("choices").getJsonObject(0).getString("text"));
      assertEquals(own.getJsonObject("usage").getInteger("prompt_tokens"), reply.json().getJsonObject("usage").getInteger("prompt_tokens"));
      assertEquals(own.getJsonObject("usage").getInteger("completion_tokens"),
          reply.json().getJsonObject("usage").getInteger("completion_tokens"));

      h.resetEngines();
      JsonObject streamed = DisaggregatedExecutionTest.completion(true);
      RouterHarness.Reply stream = h.post("/v1/completions", streamed);
      assertLocal(h, stream);
      assertEquals("[DONE]", stream.events().get(stream.events().size() - 1));
      assertEquals(h.direct(h.engine("B0"), "/v1/completions", streamed).streamedText(), stream.streamedText());

      h.resetEngines();
      JsonObject chat = DisaggregatedExecutionTest.chat(false);
      RouterHarness.Reply chatReply = h.post("/v1/chat/completions", chat);
      assertLocal(h, chatReply);
      assertEquals(h.direct(h.engine("B0"), "/v1/chat/completions", chat).json().getJsonArray("choices").getJsonObject(0)
              .getJsonObject("message").getString("content"),
          chatReply.json().getJsonArray("choices").getJsonObject(0).getJsonObject("message").getString("content"));

      h.resetEngines();
      JsonObject batch = new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 4)
          .put("prompt", new JsonArray().add("a short one").add(RouterHarness.words(120)));
      RouterHarness.Reply batched = h.post("/v1/completions", batch);
      assertEquals(200, batched.status(), batched.body());
      assertEquals(2, batched.json().getJsonArray("choices").size());
      assertEquals(1, h.engine("B0").requests().stream().filter(r -> r.getString("request_id").contains("-local")).count(),
          "a batch is counted prompt by prompt: the short one local, the long one disaggregated");
      assertEquals(1, prefills(h, "P0") + prefills(h, "B0"));

      assertTrue(h.get("/metrics").body().contains("narwhal_placement_decisions_total{phase=\"decode\",reason=\"local\"} 4.0"),
          h.get("/metrics").body().lines().filter(l -> l.startsWith("narwhal_placement_decisions_total")).toList().toString());
      assertEquals(0, h.reservations());
    }
  }

  @Test
  void aLongPromptIsDisaggregatedAndTheKeyHotReloads() throws Exception {
    try (RouterHarness h = start(64)) {
      JsonObject longPrompt = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", RouterHarness.words(120))
          .put("max_tokens", 4).put("stream", true);
      RouterHarness.Reply reply = h.post("/v1/completions", longPrompt);
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = h.journalRow(reply.requestId());
      assertNotEquals("local", row.getString("prefill_placement"), row.encode());
      assertEquals(1, prefills(h, "P0") + prefills(h, "B0"), "one remote prefill");

      // token ids are counted exactly: 64 ids go local, 65 do not
      h.resetEngines();
      JsonArray ids = new JsonArray();
      for (int i = 0; i < 64; i++) ids.add(100 + i);
      assertLocal(h, h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", ids)
          .put("max_tokens", 4)));
      h.resetEngines();
      RouterHarness.Reply over = h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL)
          .put("prompt", ids.copy().add(7)).put("max_tokens", 4));
      assertNotEquals("local", h.journalRow(over.requestId()).getString("prefill_placement"));

      reload(h, 0);
      h.resetEngines();
      RouterHarness.Reply off = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(200, off.status(), off.body());
      assertNotEquals("local", h.journalRow(off.requestId()).getString("prefill_placement"), "0 turns local prefill off");
      assertEquals(1, prefills(h, "P0") + prefills(h, "B0"));

      reload(h, 64);
      h.resetEngines();
      assertLocal(h, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)));
    }
  }

  @Test
  void aLocalLegRefusedBeforeOutputIsRetriedDisaggregatedAndCountsAgainstItsEngine() throws Exception {
    try (RouterHarness h = RouterHarness.start(FLEET, json -> json
        .put("placement", new JsonObject().put("policy", "least_reserved").put("local_prefill_max_tokens", 64))
        .put("serving", new JsonObject().put("max_attempts", 2).put("retry_base_s", 0.01).put("retry_cap_s", 0.02))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)))) {
      h.engine("B0").faults().add(new JsonObject().put("kind", "queue_full").put("count", 1));
      RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(true));
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = h.journalRow(reply.requestId());
      assertEquals(2, row.getInteger("attempts"), row.encode());
      JsonObject failure = row.getJsonArray("attempt_failures").getJsonObject(0);
      assertEquals("engine_overloaded", failure.getString("reason"), failure.encode());
      assertEquals("B0", failure.getString("prefill_iid"));
      assertEquals("B0", failure.getString("decode_iid"));
      assertEquals("P0", row.getString("prefill_iid"), "the retry, with B0 excluded, is disaggregated: " + row.encode());
      assertEquals("D0", row.getString("decode_iid"));
      h.placementSettled();
      JsonObject b0 = h.get("/narwhal/state").json().getJsonArray("engines").stream().map(JsonObject.class::cast)
          .filter(e -> "B0".equals(e.getString("iid"))).findFirst().orElseThrow();
      assertEquals(1, b0.getJsonObject("streaks").getInteger("overload"), b0.encode());
      assertEquals(0, h.reservations());
    }
  }

  @Test
  void withTheBothEngineOutOfPlacementAShortPromptIsDisaggregated() throws Exception {
    try (RouterHarness h = start(64)) {
      h.admin("eject", new JsonObject().put("iid", "B0"));
      assertEquals("ejected", AdminAndPlacementTest.engineState(h, "B0"));
      h.resetEngines();
      for (boolean stream : List.of(false, true)) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(stream));
        assertEquals(200, reply.status(), reply.body());
        JsonObject row = h.journalRow(reply.requestId());
        assertEquals("P0", row.getString("prefill_iid"), row.encode());
        assertEquals("D0", row.getString("decode_iid"), row.encode());
        assertEquals(1, row.getInteger("attempts"));
        assertTrue(row.getJsonArray("attempt_failures").isEmpty(), row.encode());
      }
      assertTrue(h.engine("B0").requests().isEmpty());
      assertNull(h.get("/metrics").body().lines().filter(l -> l.startsWith("narwhal_placement_decisions_total{phase=\"decode\",reason=\"local\"}")
          && !l.endsWith(" 0.0")).findFirst().orElse(null));
    }
  }
}
