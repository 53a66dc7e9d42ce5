package narwhal.router;

import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Admin commands change engine state only with the token, and no request is ever placed on an engine out of service. */
@Timeout(90)
class AdminAndPlacementTest {

  @Test
  void noRequestReachesEjectedQuarantinedOrDrainingEnginesUnderConcurrentLoad() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode", "D2:decode"))) {
      Object refused = h.admin("eject", new JsonObject().put("iid", "D2"), "wrong-token");
      assertEquals(401, assertInstanceOf(ReplyException.class, refused).failureCode());
      assertEquals(401, assertInstanceOf(ReplyException.class, h.admin("eject", new JsonObject().put("iid", "D2"), null)).failureCode());
      assertEquals("serving", engineState(h, "D2"), "a refused command changes nothing");
      assertTrue(h.get("/metrics").body().contains("narwhal_admin_refused_total 2.0"));

      h.admin("eject", new JsonObject().put("iid", "D0"));
      h.admin("quarantine", new JsonObject().put("iid", "D1").put("seconds", 600));
      h.admin("drain", new JsonObject().put("iid", "P0"));
      assertEquals("ejected", engineState(h, "D0"));
      assertEquals("quarantined", engineState(h, "D1"));
      assertEquals("draining", engineState(h, "P0"));
      h.engines.values().forEach(narwhal.sim.SimEngine::clearRequests);

      ExecutorService clients = Executors.newFixedThreadPool(20);
      List<java.util.concurrent.Future<RouterHarness.Reply>> replies = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        boolean stream = i % 2 == 0;
        replies.add(clients.submit(() -> h.post("/v1/completions", DisaggregatedExecutionTest.completion(stream))));
      }
      for (java.util.concurrent.Future<RouterHarness.Reply> reply : replies) assertEquals(200, reply.get().status());
      clients.shutdown();
      assertTrue(h.engine("D0").requests().isEmpty(), "ejected engine got no request");
      assertTrue(h.engine("D1").requests().isEmpty(), "quarantined engine got no request");
      assertTrue(h.engine("P0").requests().isEmpty(), "draining engine got no new request");
      assertEquals(40, h.engine("D2").requests().size());
      assertEquals(0, h.reservations());

      h.admin("undrain", new JsonObject().put("iid", "P0"));
      h.admin("readmit", new JsonObject().put("iid", "D0"));
      assertEquals("serving", engineState(h, "D0"), "readmit is immediate");
      ContractReadmissionTest.awaitState(h, "P0", "serving", () -> { });
      assertTrue(h.journalEvents().stream().anyMatch(e -> "engine_state".equals(e.getString("event"))
          && "D0".equals(e.getString("iid")) && "ejected".equals(e.getString("to")) && "admin".equals(e.getString("cause"))));
    }
  }

  @Test
  void stateNeedsNoTokenAndBadCommandsAreRefusedWithAReason() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("B0:both"))) {
      JsonObject state = assertInstanceOf(JsonObject.class, h.admin("state", new JsonObject(), null));
      assertEquals("B0", state.getJsonArray("engines").getJsonObject(0).getString("iid"));
      ReplyException unknown = assertInstanceOf(ReplyException.class, h.admin("eject", new JsonObject().put("iid", "X9"), RouterHarness.ADMIN_TOKEN));
      assertEquals(400, unknown.failureCode());
      assertTrue(unknown.getMessage().contains("X9"));
      ReplyException badSeconds = assertInstanceOf(ReplyException.class,
          h.admin("quarantine", new JsonObject().put("iid", "B0").put("seconds", -1), RouterHarness.ADMIN_TOKEN));
      assertTrue(badSeconds.getMessage().contains("seconds"));
      ReplyException nonsense = assertInstanceOf(ReplyException.class, h.admin("explode", new JsonObject(), RouterHarness.ADMIN_TOKEN));
      assertTrue(nonsense.getMessage().contains("explode"));
    }
  }

  static String engineState(RouterHarness h, String iid) {
    return h.get("/narwhal/state").json().getJsonArray("engines").stream().map(JsonObject.class::cast)
        .filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow().getString("state");
  }
}
