package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An engine moved to another host under the same iid (a hot reload changes its {@code url}) is a new engine: its
 * attested facts are learned again and it passes the readmission checks before it takes traffic, so every request
 * keeps succeeding, none against the facts of the engine it replaced.
 */
@Timeout(90)
class RepointedEngineTest {

  @Test
  void aProducerRepointedByReloadIsRelearnedAndRecheckedWhileEveryRequestSucceeds() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json.put("recovery",
        new JsonObject().put("monitor_interval_s", 0.05).put("readmit_every", 2).put("liveness_every", 100000)))) {
      SimEngine moved = RouterHarness.await(SimEngine.start(h.vertx, new SimEngineOptions().setName("P0-moved").setRole("prefill")
          .setPort(0).setSideChannelPort(0)));
      try {
        JsonObject fleet = h.config.toJson();
        JsonArray engines = new JsonArray();
        for (Object o : fleet.getJsonArray("engines")) {
          JsonObject e = ((JsonObject) o).copy();
          if ("P0".equals(e.getString("iid"))) e.put("url", moved.url());
          engines.add(e);
        }
        h.config = NarwhalConfig.fromJson(fleet.put("engines", engines));
        h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
        h.resetEngines();

        for (int i = 0; i < 10; i++) {
          RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(i % 2 == 0));
          assertEquals(200, reply.status(), "while P0 is re-checked, P1 serves: " + reply.body());
        }
        JsonObject back = OperatorSafetyTest.awaitEvent(h, e -> "engine_state".equals(e.getString("event"))
            && "P0".equals(e.getString("iid")) && "serving".equals(e.getString("to")));
        assertEquals("lifecycle_probe", back.getString("cause"));
        assertTrue(OperatorSafetyTest.awaitEvent(h, e -> "engine_state".equals(e.getString("event")) && "P0".equals(e.getString("iid"))
            && "changed".equals(e.getString("cause"))) != null);

        for (int i = 0; i < 20; i++) {
          RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(i % 2 == 0));
          assertEquals(200, reply.status(), "descriptors of the moved engine are checked against its own facts: " + reply.body());
        }
        assertTrue(moved.requests().stream().anyMatch(r -> r.getString("request_id").endsWith("-prefill")
                && !r.getString("request_id").startsWith("probe-")),
            "client prefills reach the engine at its new address");
        assertTrue(h.engine("P0").requests().stream().noneMatch(r -> r.getString("request_id").endsWith("-prefill")),
            "and none reach the old one");
      } finally {
        RouterHarness.await(moved.close());
      }
    }
  }
}
