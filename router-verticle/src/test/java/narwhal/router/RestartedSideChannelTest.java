package narwhal.router;

import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A producer restarted on its URL with another KV side channel (the fleet file names none, so the router learned it
 * from the attestation): once it is back in service, its handoffs are checked against what it attests now, not the
 * side channel of the process it replaced.
 */
class RestartedSideChannelTest {
  @Test
  void aReadmittedProducerIsCheckedAgainstItsNewSideChannel() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.05).put("readmit_every", 2).put("liveness_every", 100000)))) {
      assertEquals(200, h.post("/v1/completions", completion()).status());
      SimEngine old = h.engine("P0");
      int port = old.port();
      RouterHarness.await(old.close());
      SimEngine restarted = RouterHarness.await(SimEngine.start(h.vertx, new SimEngineOptions().setName("P0").setRole("prefill")
          .setPort(port).setSideChannelPort(0)));
      h.engines.put("P0", restarted);

      LinkedBlockingQueue<JsonObject> changes = new LinkedBlockingQueue<>();
      MessageConsumer<JsonObject> watcher = h.vertx.eventBus().consumer(Addresses.FLEET_CHANGED, m -> {
        if ("P0".equals(m.body().getString("iid"))) changes.add(m.body());
      });
      RouterHarness.await(watcher.completion());
      h.admin("eject", new JsonObject().put("iid", "P0").put("force", true));
      for (JsonObject change = changes.poll(30, TimeUnit.SECONDS); ; change = changes.poll(30, TimeUnit.SECONDS)) {
        assertNotNull(change, "P0 came back to serving");
        if ("serving".equals(change.getString("state"))) break;
      }
      RouterHarness.Reply reply = null;
      for (int i = 0; i < 200; i++) {
        reply = h.post("/v1/completions", completion());
        if (reply.status() == 200) break;
        RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
      }
      assertEquals(200, reply.status(), reply.body());
    }
  }

  private static JsonObject completion() {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", 3);
  }
}
