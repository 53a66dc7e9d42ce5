package narwhal.router;

import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Engines started with an API key (vLLM's {@code --api-key}) and a router given it through
 * {@code engine.engine_api_key_env}: the key is on every request the router makes to an engine — preflight,
 * both legs, inference probes, lifecycle validation, liveness — so the engines refuse nothing. Without it,
 * preflight fails and every row says why.
 */
@Timeout(120)
class KeyedEnginesTest {

  static JsonObject keyed(JsonObject json) {
    return json.put("engine", json.getJsonObject("engine").put("engine_api_key_env", RouterHarness.ENGINE_KEY_ENV)
        .put("decode_read_timeout_s", 0.3).put("first_token_timeout_s", 1));
  }

  static void assertNothingRefused(RouterHarness h) {
    h.engines.forEach((iid, sim) -> assertEquals(0, sim.stats().getLong("unauthorized"), iid + " refused a request: " + sim.stats()));
  }

  @Test
  void keyedFleetPassesStrictPreflightServesHoldsEjectsAndReadmitsWithNothingRefused() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> keyed(json)
        .put("recovery", new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.1).put("readmit_every", 3)
            .put("liveness_every", 2)), (iid, options) -> options.setApiKey(RouterHarness.ENGINE_KEY))) {
      assertTrue(h.preflight.passed(), h.preflight.table());
      assertEquals(4, h.preflight.checks().stream().filter(c -> c.check().equals("kv transfer") && c.ok()).count(),
          "every producer→consumer pair decoded: " + h.preflight.table());

      assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status());
      RouterHarness.Reply streamed = h.post("/v1/chat/completions", new JsonObject().put("model", RouterHarness.MODEL)
          .put("stream", true).put("max_tokens", 4)
          .put("messages", new io.vertx.core.json.JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
      assertEquals(200, streamed.status(), streamed.body());
      assertFalse(streamed.streamedText().isEmpty(), streamed.body());

      LinkedBlockingQueue<JsonObject> changes = new LinkedBlockingQueue<>();
      MessageConsumer<JsonObject> watcher = h.vertx.eventBus().consumer(Addresses.FLEET_CHANGED, m -> {
        if ("D0".equals(m.body().getString("iid"))) changes.add(m.body());
      });
      RouterHarness.await(watcher.completion());
      h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 1).put("phase", "decode").put("count", 100000));
      int failures = 0;
      while (failures < 3) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
        if (reply.status() == 504) failures++;
        else assertEquals(200, reply.status(), reply.body());
      }
      JsonObject held = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(held, "D0 changed state");
      assertEquals("held", held.getString("state"));
      JsonObject ejected = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(ejected);
      assertEquals("ejected", ejected.getString("state"), "the inference probe failed while the fault persisted");
      String why = ContractReadmissionTest.engine(h, "D0").getString("last_probe");
      assertTrue(why.contains("failed: engine went silent between tokens"), "the probe says why: " + why);

      h.engine("D0").faults().clear();
      JsonObject readmitted = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(readmitted);
      assertEquals("serving", readmitted.getString("state"));
      assertEquals("lifecycle_probe", readmitted.getString("cause"), "an ejected engine comes back through the preflight checks");
      assertTrue(h.engine("D0").requests().stream().anyMatch(r -> r.getString("request_id").startsWith("probe-")),
          "readmission followed a probe that decoded on D0");
      String metrics = h.get("/metrics").body();
      assertTrue(metrics.contains("narwhal_engine_readmissions_total{evidence=\"lifecycle_probe\",iid=\"D0\"}"), metrics);

      assertNothingRefused(h);
      SimEngine p0 = h.engine("P0");
      assertEquals(401, h.direct(p0, "/v1/completions", DisaggregatedExecutionTest.completion(false)).status(),
          "the engines do refuse a request without the key");
      assertEquals(1, p0.stats().getLong("unauthorized"), "and count it");
    }
  }

  @Test
  void keyedFleetWithAContractIsReadmittedThroughLifecycleValidation() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> keyed(json)
        .put("engine_contract", new JsonObject().put("model", RouterHarness.MODEL))
        .put("recovery", new JsonObject().put("eject_after", 1).put("monitor_interval_s", 0.1).put("readmit_every", 2)
            .put("liveness_every", 2)), (iid, options) -> options.setApiKey(RouterHarness.ENGINE_KEY))) {
      SimEngine d0 = h.engine("D0");
      int port = d0.port();
      RouterHarness.await(d0.close());
      ContractReadmissionTest.awaitState(h, "D0", "ejected", () -> h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)));

      SimEngine restarted = RouterHarness.await(SimEngine.start(h.vertx, d0.options().setPort(port)));
      h.engines.put("D0", restarted);
      ContractReadmissionTest.awaitState(h, "D0", "serving", () -> { });
      FailureChecks.eventually(h, () -> ContractReadmissionTest.journalEvents(h).stream().anyMatch(e -> "D0".equals(e.getString("iid"))
              && "serving".equals(e.getString("to")) && "lifecycle_probe".equals(e.getString("cause"))),
          () -> "readmitted on lifecycle evidence: " + ContractReadmissionTest.journalEvents(h));
      List<String> ids = restarted.requests().stream().map(r -> r.getString("request_id")).toList();
      assertTrue(ids.stream().anyMatch(id -> id.startsWith("probe-") && id.endsWith("-generation")), "a direct generation: " + ids);
      assertTrue(ids.stream().anyMatch(id -> id.startsWith("probe-") && id.endsWith("-decode")), "a KV transfer probe: " + ids);
      assertNothingRefused(h);
    }
  }

  @Test
  void withoutTheKeyStrictPreflightFailsAndEveryRowSaysWhy() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), KeyedEnginesTest::keyed,
        (iid, options) -> options.setApiKey(RouterHarness.ENGINE_KEY))) {
      JsonObject unset = h.config.toJson();
      unset.getJsonObject("engine").put("engine_api_key_env", "NARWHAL_TEST_UNSET_KEY");
      List<PreflightReport.Check> rows = new ArrayList<>();
      PreflightReport report = RouterHarness.await(new Preflight(h.vertx, NarwhalConfig.fromJson(unset), new EngineFacts(),
          RouterHarness.ENV).run(rows::add));
      assertFalse(report.passed(), report.table());
      assertEquals(new java.util.HashSet<>(report.checks()), new java.util.HashSet<>(rows), "each row was reported as it completed");
      assertEquals(report.checks().size(), rows.size());
      assertEquals(List.of("fleet", "P0", "P0", "P0", "D0", "D0", "D0", "P0→D0"),
          report.checks().stream().map(PreflightReport.Check::target).toList(), "the report keeps the fleet's order");
      assertTrue(report.checks().stream().noneMatch(c -> c.detail() == null || c.detail().isBlank()), report.table());
      assertTrue(report.checks().contains(new PreflightReport.Check("fleet", "engine key", false,
          "engine.engine_api_key_env names the environment variable NARWHAL_TEST_UNSET_KEY, which is not set (or empty): "
              + "engines started with --api-key will refuse every request")), report.table());
      assertTrue(report.checks().contains(new PreflightReport.Check("P0", "health", true, "200")), "/health stays open");
      assertTrue(report.checks().contains(new PreflightReport.Check("D0", "model", false,
          "models: engine answered HTTP 401: Unauthorized")), report.table());
      assertTrue(report.checks().contains(new PreflightReport.Check("P0→D0", "kv transfer", false,
          "prefill: engine answered HTTP 401: Unauthorized")), report.table());
      assertTrue(report.table().contains("preflight FAILED"), report.table());
    }
  }
}
