package narwhal.router;

import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Day two: admin commands and readmission do what docs/operations.md promises on a real simulated fleet. The last
 * engine of a role is never taken by a command without {@code --force}; a phase nobody can take is refused before any
 * leg; an admin ejection comes back through the readmission checks; an engine that lacks the fleet's model is ejected
 * by its first 404 and kept out by the model check; undrain and quarantine ends go through the same checks.
 */
@Timeout(90)
class OperatorSafetyTest {
  /** Readmission rounds every 0.1 s; tests move the breaker's clock ahead rather than wait for a quarantine's end. */
  private static final UnaryOperator<JsonObject> FAST_ROUNDS = json -> json.put("recovery", new JsonObject()
      .put("eject_after", 3).put("monitor_interval_s", 0.05).put("readmit_every", 2).put("liveness_every", 100000));
  private static final long READMIT_INTERVAL_MS = 100;

  @Test
  void theLastDecodeEngineIsKeptUnlessForcedAndWithoutOneNoPrefillRuns() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"))) {
      h.admin("eject", new JsonObject().put("iid", "D0"));
      for (String command : List.of("eject", "quarantine", "drain")) {
        ReplyException refused = assertInstanceOf(ReplyException.class, h.admin(command,
            new JsonObject().put("iid", "D1").put("seconds", 30), RouterHarness.ADMIN_TOKEN));
        assertEquals(400, refused.failureCode());
        assertEquals(command + " D1 refused: it is the last serving engine that can take the decode phase, so every request"
            + " would fail; repeat with --force to do it anyway", refused.getMessage());
        assertEquals("serving", AdminAndPlacementTest.engineState(h, "D1"));
      }
      h.admin("eject", new JsonObject().put("iid", "D1").put("force", true));
      h.placementSettled();
      h.resetEngines();

      RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(503, reply.status(), reply.body());
      assertEquals("no_schedulable_engines", reply.error().getString("type"), reply.body());
      assertEquals("rejected", h.journalRow(reply.requestId()).getString("terminal"));
      assertTrue(h.engine("P0").requests().isEmpty() && h.engine("P1").requests().isEmpty(),
          "no prefill ran for a request no engine could decode");
      assertEquals(0, h.engine("P0").stats().getInteger("handoffs_held") + h.engine("P1").stats().getInteger("handoffs_held"));
    }
  }

  @Test
  void anAdminEjectionComesBackThroughTheReadmissionChecks() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), FAST_ROUNDS)) {
      h.admin("eject", new JsonObject().put("iid", "D0"));
      h.resetEngines();
      h.clockAhead.addAndGet(READMIT_INTERVAL_MS);
      JsonObject back = awaitEvent(h, e -> "engine_state".equals(e.getString("event")) && "D0".equals(e.getString("iid"))
          && "serving".equals(e.getString("to")));
      assertEquals("lifecycle_probe", back.getString("cause"));
      List<String> probes = h.engine("D0").requests().stream().map(r -> r.getString("request_id")).toList();
      assertTrue(probes.stream().anyMatch(id -> id.endsWith("-generation")), "a direct generation ran on D0: " + probes);
      assertTrue(probes.stream().anyMatch(id -> id.startsWith("probe-") && id.endsWith("-decode")), "a transfer decoded on D0: " + probes);
    }
  }

  @Test
  void anEngineWithoutTheModelIsEjectedByItsFirst404AndAnAddedOneIsKeptOutByTheModelCheck() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), FAST_ROUNDS)) {
      String missing = "The model `" + RouterHarness.MODEL + "` does not exist.";
      h.engine("D1").faults().add(new JsonObject().put("kind", "status").put("status", 404).put("message", missing)
          .put("type", "NotFoundError").put("phase", "decode").put("count", 1000));
      int notFound = 0;
      for (int i = 0; i < 6; i++) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
        if (reply.status() != 200) {
          notFound++;
          assertEquals(502, reply.status(), "the engine's fault, not the client's: " + reply.body());
        }
      }
      assertTrue(notFound <= 1, "D1 answered 404 once at most before it was ejected: " + notFound);
      awaitEvent(h, e -> "engine_state".equals(e.getString("event")) && "D1".equals(e.getString("iid"))
          && "ejected".equals(e.getString("to")) && "model".equals(e.getString("cause")));

      SimEngine wrong = RouterHarness.await(SimEngine.start(h.vertx, new SimEngineOptions().setName("D2").setRole("decode")
          .setModel("other/model").setPort(0).setSideChannelPort(0)));
      try {
        JsonObject fleet = h.config.toJson();
        JsonArray engines = fleet.getJsonArray("engines").copy();
        engines.add(new JsonObject().put("iid", "D2").put("url", wrong.url()).put("role", "decode"));
        h.config = NarwhalConfig.fromJson(fleet.put("engines", engines));
        h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
        JsonObject probe = awaitEvent(h, e -> "probe".equals(e.getString("event")) && "D2".equals(e.getString("iid")));
        assertEquals("failed", probe.getString("outcome"));
        assertTrue(probe.getString("detail").contains("models: model " + RouterHarness.MODEL + " not listed"), probe.encode());
        wrong.clearRequests();
        for (int i = 0; i < 6; i++) assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status());
        assertTrue(wrong.requests().stream().allMatch(r -> r.getString("request_id").startsWith("probe-")),
            "no client request reached the engine that lacks the model");
        assertEquals("ejected", AdminAndPlacementTest.engineState(h, "D2"));
      } finally {
        RouterHarness.await(wrong.close());
      }
    }
  }

  @Test
  void undrainAndAQuarantinesEndReturnAnEngineOnlyThroughTheChecks() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), FAST_ROUNDS)) {
      h.admin("drain", new JsonObject().put("iid", "D1"));
      RouterHarness.await(h.engine("D1").stopListening());
      h.admin("undrain", new JsonObject().put("iid", "D1"));
      JsonObject probe = awaitEvent(h, e -> "probe".equals(e.getString("event")) && "D1".equals(e.getString("iid")));
      assertEquals("failed", probe.getString("outcome"), "a dead engine does not pass: " + probe.encode());
      assertEquals("ejected", AdminAndPlacementTest.engineState(h, "D1"));
      for (int i = 0; i < 4; i++) assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status());

      ReplyException notDraining = assertInstanceOf(ReplyException.class,
          h.admin("undrain", new JsonObject().put("iid", "D0"), RouterHarness.ADMIN_TOKEN));
      assertEquals("undrain: D0 is not draining (it is serving)", notDraining.getMessage());
      ReplyException noWave = assertInstanceOf(ReplyException.class, h.admin("wave-restart", new JsonObject(), RouterHarness.ADMIN_TOKEN));
      assertTrue(noWave.getMessage().startsWith("wave-restart: nothing to do: engine_restart_policy is individual"), noWave.getMessage());

      h.admin("quarantine", new JsonObject().put("iid", "D1").put("seconds", 5).put("force", true));
      h.clockAhead.addAndGet(5_000);
      JsonObject expired = awaitEvent(h, e -> "engine_state".equals(e.getString("event")) && "D1".equals(e.getString("iid"))
          && "quarantine_expired".equals(e.getString("cause")));
      assertEquals("ejected", expired.getString("to"));
      JsonObject again = awaitEvent(h, e -> "probe".equals(e.getString("event")) && "D1".equals(e.getString("iid"))
          && e.getString("at").compareTo(expired.getString("at")) >= 0);
      assertEquals("failed", again.getString("outcome"));
      assertEquals("ejected", AdminAndPlacementTest.engineState(h, "D1"), "a quarantine's end does not readmit a dead engine");
    }
  }

  @Test
  void anEngineRemovedAndAddedAgainIsCheckedAndThenServes() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), FAST_ROUNDS)) {
      JsonObject full = h.config.toJson();
      JsonArray without = new JsonArray();
      full.getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> !"D1".equals(e.getString("iid"))).forEach(without::add);
      h.config = NarwhalConfig.fromJson(full.copy().put("engines", without));
      h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
      h.placementSettled();
      h.config = NarwhalConfig.fromJson(full);
      h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
      JsonObject back = awaitEvent(h, e -> "engine_state".equals(e.getString("event")) && "D1".equals(e.getString("iid"))
          && "serving".equals(e.getString("to")));
      assertEquals("lifecycle_probe", back.getString("cause"), "re-added, it is checked before it serves");
      FailureChecks.eventually(h, () -> "serving".equals(AdminAndPlacementTest.engineState(h, "D1")),
          () -> "placement takes D1 again: " + h.get("/narwhal/state").body());
      h.resetEngines();
      for (int i = 0; i < 6; i++) assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status());
      assertTrue(h.engine("D1").requests().stream().anyMatch(r -> r.getString("request_id").endsWith("-decode")),
          "client decodes reach the re-added engine");
    }
  }

  /** The first journal event matching {@code which}, waiting for it to be written. */
  static JsonObject awaitEvent(RouterHarness h, Predicate<JsonObject> which) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      for (JsonObject e : h.journalEvents()) if (which.test(e)) return e;
      Thread.sleep(20);
    }
    throw new AssertionError("no such journal event; events: " + h.journalEvents());
  }
}
