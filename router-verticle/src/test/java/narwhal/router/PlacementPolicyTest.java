package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Placement as docs/operations.md#placement describes it, through a router over real simulated engines: prompts that
 * share their leading blocks go to one producer (journal {@code prefix}), a session header keeps a conversation on one,
 * decodes go by the load the engines' own {@code /metrics} report, readings and their failures show in
 * {@code /narwhal/state} and in the metrics and are no evidence for the breaker, and the policy hot-reloads.
 */
@Timeout(90)
class PlacementPolicyTest {
  private static final String SYSTEM = "You are a careful assistant for arctic marine biology. ".repeat(60);

  private static JsonObject prompt(String text) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", text).put("max_tokens", 4).put("stream", false);
  }

  @Test
  void sharedPrefixesGoToOneProducerAndDistinctOnesSpread() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "P2:prefill", "D0:decode", "D1:decode"),
        json -> json.put("placement", new JsonObject().put("policy", "cache_aware")))) {
      for (String p : List.of("P0", "P1", "P2")) awaitLoad(h, p, load -> load.containsKey("running"));
      Set<String> producers = new HashSet<>();
      for (int i = 0; i < 9; i++) {
        RouterHarness.Reply reply = h.post("/v1/completions", prompt(SYSTEM + " Question " + i + ": how deep do narwhals dive?"));
        assertEquals(200, reply.status(), reply.body());
        JsonObject row = h.journalRow(reply.requestId());
        if (i == 0) {
          assertEquals("new_prefix", row.getString("prefill_placement"), "a prefix seen for the first time goes to the least loaded producer, by rendezvous among equals: " + row.encode());
          continue;
        }
        producers.add(row.getString("prefill_iid"));
        assertTrue(List.of("prefix", "spill").contains(row.getString("prefill_placement")), row.encode());
      }
      assertEquals(1, producers.size(), "one system prompt, one producer from its second request on (nothing was loaded): " + producers);

      Set<String> spread = new HashSet<>();
      for (int group = 0; group < 12; group++) {
        RouterHarness.Reply reply = h.post("/v1/completions", prompt(("group " + group + " ").repeat(300)));
        spread.add(h.journalRow(reply.requestId()).getString("prefill_iid"));
      }
      assertTrue(spread.size() >= 2, "different prefixes use several producers: " + spread);

      Set<String> session = new HashSet<>();
      for (int turn = 0; turn < 4; turn++) {
        RouterHarness.Reply reply = h.post("/v1/completions", prompt("turn " + turn).toBuffer(), Map.of("x-session-id", "conv-7"));
        JsonObject row = h.journalRow(reply.requestId());
        session.add(row.getString("prefill_iid"));
        assertEquals("session", row.getString("prefill_placement"));
      }
      assertEquals(1, session.size(), "a session stays on one producer however its prompt changes");
      assertTrue(h.get("/metrics").body().contains("narwhal_placement_decisions_total{phase=\"prefill\",reason=\"session\"} 4.0"));
    }
  }

  @Test
  void readingsShowInStateAFailingOneIsNoBreakerEvidenceAndThePolicyReloads() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("placement", new JsonObject().put("metrics_interval_s", 0.1).put("metrics_timeout_s", 0.2))
        .put("recovery", new JsonObject().put("liveness_every", 100000)))) {
      JsonObject d0 = awaitLoad(h, "D0", load -> load.containsKey("running"));
      assertEquals(0.0, d0.getDouble("waiting"));
      assertEquals("cluster", h.get("/narwhal/state").json().getJsonObject("placement").getString("view"));
      assertEquals("cache_aware", h.get("/narwhal/state").json().getJsonObject("placement").getString("policy"));

      RouterHarness.await(h.engine("D1").stopListening());
      JsonObject failed = awaitLoad(h, "D1", load -> load.containsKey("error"));
      assertTrue(failed.getString("error").startsWith("could not read /metrics"), failed.encode());
      assertTrue(h.get("/metrics").body().lines().anyMatch(l -> l.startsWith("narwhal_engine_load_reads_total{iid=\"D1\",outcome=\"failed\"}")
          && !l.endsWith(" 0.0")));
      assertEquals("serving", AdminAndPlacementTest.engineState(h, "D1"), "a failed reading is no evidence for the breaker");
      RouterHarness.await(h.engine("D1").resumeListening());

      h.config = narwhal.common.config.NarwhalConfig.fromJson(h.config.toJson()
          .put("placement", new JsonObject().put("policy", "least_reserved")));
      h.vertx.eventBus().publish(narwhal.common.bus.Addresses.CONFIG_CHANGED, h.config.toJson());
      FailureChecks.eventually(h,
          () -> "least_reserved".equals(h.get("/narwhal/state").json().getJsonObject("placement").getString("policy")),
          () -> "the policy reloaded");
      RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals("least_reserved", h.journalRow(reply.requestId()).getString("decode_placement"));
    }
  }

  private static JsonObject awaitLoad(RouterHarness h, String iid, java.util.function.Predicate<JsonObject> ready) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      JsonObject engine = h.get("/narwhal/state").json().getJsonArray("engines").stream().map(JsonObject.class::cast)
          .filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow();
      JsonObject load = engine.getJsonObject("load");
      if (load != null && ready.test(load)) return load;
      Thread.sleep(20);
    }
    throw new AssertionError("no such reading of " + iid + ": " + h.get("/narwhal/state").body());
  }
}
