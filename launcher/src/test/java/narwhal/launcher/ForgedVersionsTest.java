package narwhal.launcher;

import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.SharedState;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Versions that cannot be pinned (docs/operations.md#threat-model): a Hazelcast lite member of the replicas' cluster
 * writes straight into the shared maps versions, reading times and lease ends far ahead of every clock
 * ({@code Long.MAX_VALUE}, 4e18); two real replicas treat them as absent, keep placing on the engine, overwrite them
 * with their own truth, and an operator's eject and readmit still work.
 */
@Timeout(120)
class ForgedVersionsTest {
  private static final List<String> FLEET = List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode");

  private static JsonObject quiet(JsonObject fleet) {
    return fleet.put("recovery", new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.1)
        .put("readmit_every", 100_000).put("liveness_every", 100_000));
  }

  private static String forged(String iid, String state) {
    return new JsonObject().put("iid", iid).put("state", state).put("cause", "admin").put("changed_ms", Long.MAX_VALUE)
        .put("origin", "breaker-forged").encode();
  }

  @Test
  void aVersionOfLongMaxValueEjectsNothingAndReadmissionStillWorks() {
    try (ClusterHarness h = ClusterHarness.start(FLEET, ForgedVersionsTest::quiet, (iid, o) -> { })) {
      List<NarwhalNode> replicas = List.of(h.addReplica(), h.addReplica());
      HazelcastInstance intruder = Hazelcast.newHazelcastInstance(ClusterBootstrap.hazelcastConfig(h.config().cluster(), true));
      try {
        var states = intruder.<String, String>getMap(SharedState.ENGINE_STATE_MAP);
        states.put("D0", forged("D0", "ejected"));
        states.put(SharedState.FLEET_HOLD_KEY, new JsonObject().put("fleet_hold", true).put("changed_ms", Long.MAX_VALUE)
            .put("origin", "breaker-forged").encode());
        intruder.<String, String>getMap("narwhal.leases").put("probe.D1", new JsonObject().put("by", "forged").put("until", Long.MAX_VALUE).encode());

        for (NarwhalNode node : replicas) {
          for (int i = 0; i < 3; i++) assertEquals(200, h.complete(node), "the forged state steers no request");
        }
        h.awaitTrue("every replica still places on D0 after two resyncs", 10_000, () -> ClusterHarness.all(replicas,
            node -> h.breaker(node).map(s -> "serving".equals(ClusterHarness.engineIn(s, "D0").getString("state"))
                && !s.getBoolean("fleet_hold", false)).compose(ok -> ok ? h.refuses(node, "D0", Phase.DECODE).map(r -> !r) : Future.succeededFuture(false))));

        h.admin(replicas.get(0), "eject", new JsonObject().put("iid", "D0"));
        h.awaitTrue("the eject overwrote the forged entry and every replica follows it", 10_000, () -> ClusterHarness.all(replicas,
            node -> h.refuses(node, "D0", Phase.DECODE)));
        JsonObject written = new JsonObject(states.get("D0"));
        assertTrue(written.getLong("changed_ms") < Long.MAX_VALUE / 2, "the replica's own version replaced the forged one: " + written);

        states.put("D0", forged("D0", "ejected"));
        h.admin(replicas.get(1), "readmit", new JsonObject().put("iid", "D0"));
        h.awaitTrue("readmission wins over a forged ejection", 10_000,
            () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D0", Phase.DECODE).map(r -> !r)));

        h.admin(replicas.get(0), "eject", new JsonObject().put("iid", "D1"));
        h.admin(replicas.get(0), "readmit", new JsonObject().put("iid", "D1"));
        h.awaitTrue("a forged probe lease did not hold D1 out", 10_000,
            () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D1", Phase.DECODE).map(r -> !r)));
      } finally {
        intruder.shutdown();
      }
    }
  }

  @Test
  void aLoadReadingFromTheFarFutureIsReadAgain() {
    try (ClusterHarness h = ClusterHarness.start(FLEET, fleet -> quiet(fleet).put("placement",
        new JsonObject().put("policy", "load").put("metrics_interval_s", 0.2)), (iid, o) -> { })) {
      List<NarwhalNode> replicas = List.of(h.addReplica(), h.addReplica());
      HazelcastInstance intruder = Hazelcast.newHazelcastInstance(ClusterBootstrap.hazelcastConfig(h.config().cluster(), true));
      try {
        var loads = intruder.<String, String>getMap("narwhal.engine-load");
        long forgedAt = 4_000_000_000_000_000_000L;
        loads.put("P0", new JsonObject().put("iid", "P0").put("read_at_ms", forgedAt).put("reader", "forged")
            .put("running", 0.0).put("waiting", 0.0).put("kv_usage", 0.0).encode());
        h.awaitTrue("a replica read P0 again and overwrote the forged reading", 10_000, () -> Future.succeededFuture(
            loads.get("P0") != null && new JsonObject(loads.get("P0")).getLong("read_at_ms") < forgedAt));
        for (NarwhalNode node : replicas) assertEquals(200, h.complete(node));
      } finally {
        intruder.shutdown();
      }
    }
  }
}
