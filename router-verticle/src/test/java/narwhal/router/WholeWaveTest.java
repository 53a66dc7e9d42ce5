package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Under the whole-wave policy any ejection holds the fleet (503 standby) until a validated wave restart. */
@Timeout(60)
class WholeWaveTest {

  @Test
  void anEjectionHoldsTheFleetUntilWaveRestart() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("engine_contract", new JsonObject().put("vllm_version", "0.29.0").put("model", RouterHarness.MODEL))
        .put("recovery", new JsonObject().put("engine_restart_policy", "whole_wave").put("monitor_interval_s", 0.1)
            .put("readmit_every", 2).put("liveness_every", 100000)))) {
      h.admin("eject", new JsonObject().put("iid", "D1"));
      RouterHarness.Reply held = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(503, held.status(), held.body());
      assertEquals("standby", held.error().getString("type"));
      assertEquals("1", held.retryAfter());
      assertEquals(503, h.get("/ready").status());
      assertEquals(true, h.get("/narwhal/state").json().getBoolean("fleet_hold"));

      JsonObject state = h.admin("wave-restart", new JsonObject());
      assertEquals(false, state.getBoolean("fleet_hold"));
      assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status());
      assertEquals("serving", AdminAndPlacementTest.engineState(h, "D1"), "the whole fleet was validated and readmitted together");
    }
  }
}
