package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A reload that changes keys read only at start says a restart is pending instead of passing as applied. */
@Timeout(60)
class RestartPendingTest {

  @Test
  void startOnlyKeysChangedByAReloadAreReportedAsPendingNotApplied() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      reload(h, h.config.toJson().put("server", h.config.toJson().getJsonObject("server").put("port", 18_123)));
      awaitPending(h, new JsonArray().add("server.port"));
      String metrics = h.get("/metrics").body();
      assertTrue(metrics.contains("narwhal_config_reloads_total{outcome=\"restart_pending\"} 1.0"), metrics);
      assertTrue(metrics.contains("narwhal_config_reloads_total{outcome=\"applied\"} 0.0"), "nothing else changed: nothing applied");
      assertTrue(metrics.contains("narwhal_config_restart_pending 1.0"));

      reload(h, h.config.toJson().put("serving", h.config.toJson().getJsonObject("serving").put("max_attempts", 2)));
      FailureChecks.eventually(h, () -> h.get("/metrics").body().contains("narwhal_config_reloads_total{outcome=\"applied\"} 1.0"),
          () -> "the next change applied");
      assertEquals(new JsonArray().add("server.port"), h.get("/narwhal/state").json().getJsonArray("restart_pending"),
          "still pending: the replica runs on its start port");
    }
  }

  private static void reload(RouterHarness h, JsonObject fleet) {
    h.config = NarwhalConfig.fromJson(fleet);
    h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());
  }

  private static void awaitPending(RouterHarness h, JsonArray expected) {
    FailureChecks.eventually(h, () -> expected.equals(h.get("/narwhal/state").json().getJsonArray("restart_pending")),
        () -> "restart_pending: " + h.get("/narwhal/state").body());
  }
}
