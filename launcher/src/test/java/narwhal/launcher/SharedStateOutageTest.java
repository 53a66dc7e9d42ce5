package narwhal.launcher;

import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.LegOutcome;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica whose shared-state operations stall (a real two-member Hazelcast cluster; replica A reaches it through a
 * {@link StallingSharedData}): A's guard opens, A keeps serving and keeps ejecting on its own book, and when the shared
 * state answers again both replicas converge on the newest state.
 */
@Timeout(180)
class SharedStateOutageTest {

  @Test
  void aReplicaCutOffFromTheSharedStateKeepsServingAndEjectingThenConverges() {
    JsonObject recovery = new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.1).put("readmit_every", 100_000)
        .put("liveness_every", 100_000);
    JsonObject guard = new JsonObject().put("operation_timeout_s", 0.2).put("failure_threshold", 2).put("reset_timeout_s", 0.5);
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"),
        json -> json.put("recovery", recovery).put("cluster", json.getJsonObject("cluster").put("shared_state", guard)), (iid, o) -> { })) {
      StallingSharedData outage = new StallingSharedData();
      NarwhalNode a = h.addReplica(NarwhalNode.PreflightMode.STRICT, outage::wrap);
      NarwhalNode b = h.addReplica();
      assertEquals(200, h.complete(a));
      assertEquals("closed", ClusterHarness.await(h.breaker(a)).getString("shared_state"));

      outage.stall();
      h.awaitTrue("A's guard opens once its shared-state operations time out", 20_000,
          () -> h.breaker(a).map(s -> "open".equals(s.getString("shared_state"))));
      assertTrue(outage.stalledCalls() >= 2, "the operations that opened the guard really hung: " + outage.stalledCalls());
      assertTrue(a.registry().scrape().contains("narwhal_shared_state_breaker{state=\"open\"} 1.0"), "the gauge shows it");

      for (int i = 0; i < 6; i++) assertEquals(200, h.complete(a), "A serves while cut off");
      for (int i = 0; i < 3; i++) {
        a.vertx().eventBus().send(Addresses.BREAKER_OUTCOME,
            new LegOutcome("D1", Phase.DECODE, false, FailureClass.CONNECTION, "connect_error", null, false).toJson(),
            new DeliveryOptions().setLocalOnly(true));
      }
      h.awaitTrue("A ejects D1 on its own book", 10_000, () -> h.refuses(a, "D1", Phase.DECODE));
      JsonObject d1 = ClusterHarness.engineIn(ClusterHarness.await(h.breaker(a)), "D1");
      assertEquals("ejected", d1.getString("state"));
      assertEquals("connection", d1.getString("cause"));
      boolean bRefuses = ClusterHarness.await(h.refuses(b, "D1", Phase.DECODE));
      assertFalse(bRefuses, "B has not heard: A's decision is queued for the cluster");
      for (int i = 0; i < 3; i++) assertEquals(200, h.complete(a), "A serves on D0 alone");

      outage.resume();
      h.awaitTrue("A's guard closes after a half-open try", 20_000,
          () -> h.breaker(a).map(s -> "closed".equals(s.getString("shared_state"))));
      h.awaitTrue("both replicas hold D1 ejected by A's connection verdict", 20_000,
          () -> ClusterHarness.all(List.of(a, b), node -> h.breaker(node).map(s -> {
            JsonObject e = ClusterHarness.engineIn(s, "D1");
            return "ejected".equals(e.getString("state")) && "connection".equals(e.getString("cause"));
          })));
      h.awaitTrue("both placements refuse D1", 10_000, () -> ClusterHarness.all(List.of(a, b), node -> h.refuses(node, "D1", Phase.DECODE)));

      JsonObject readmitted = h.admin(b, "readmit", new JsonObject().put("iid", "D1"));
      assertEquals("serving", ClusterHarness.engineIn(readmitted, "D1").getString("state"));
      h.awaitTrue("a newer decision made elsewhere wins on both", 10_000,
          () -> ClusterHarness.all(List.of(a, b), node -> h.refuses(node, "D1", Phase.DECODE).map(r -> !r)));
    }
  }
}
