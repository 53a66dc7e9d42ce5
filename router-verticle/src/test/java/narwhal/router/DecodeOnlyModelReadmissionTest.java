package narwhal.router;

import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A model served only by {@code decode} engines (for the endpoints an engine runs whole) has no producer to make a
 * handoff: its ejected engine is readmitted on the other readmission checks, on real simulated engines.
 */
@Timeout(90)
class DecodeOnlyModelReadmissionTest {
  static final String EMBED = "other/embed";

  @Test
  void anEngineOfAModelWithoutProducersPassesReadmission() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "E0:decode"), json -> {
      for (Object o : json.getJsonArray("engines")) {
        if ("E0".equals(((JsonObject) o).getString("iid"))) ((JsonObject) o).put("model", EMBED);
      }
      return json.put("recovery", new JsonObject().put("monitor_interval_s", 0.05).put("readmit_every", 2)
          .put("liveness_every", 100000));
    }, (iid, options) -> {
      if ("E0".equals(iid)) options.setModel(EMBED);
    })) {
      LinkedBlockingQueue<JsonObject> changes = new LinkedBlockingQueue<>();
      MessageConsumer<JsonObject> watcher = h.vertx.eventBus().consumer(Addresses.FLEET_CHANGED, m -> {
        if ("E0".equals(m.body().getString("iid"))) changes.add(m.body());
      });
      RouterHarness.await(watcher.completion());
      h.admin("eject", new JsonObject().put("iid", "E0").put("force", true));
      JsonObject ejected = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(ejected);
      assertEquals("ejected", ejected.getString("state"));
      JsonObject readmitted = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(readmitted, "E0 came back: " + AdminAndPlacementTest.engineState(h, "E0"));
      assertEquals("serving", readmitted.getString("state"));
      assertEquals("lifecycle_probe", readmitted.getString("cause"));
      assertTrue(h.engine("E0").requests().stream().anyMatch(r -> String.valueOf(r.getString("request_id")).startsWith("probe-")),
          "readmission generated on E0 itself");
      RouterHarness.Reply tokens = h.post("/tokenize", new JsonObject().put("model", EMBED).put("prompt", "hi"));
      assertEquals(200, tokens.status(), tokens.body());
    }
  }
}
