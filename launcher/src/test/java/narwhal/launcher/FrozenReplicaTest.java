package narwhal.launcher;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A replica frozen (SIGSTOP, as a long GC pause or a stalled VM does) past Hazelcast's heartbeat limit is expelled and
 * forms a cluster of its own; an admin ejection made meanwhile through the other replica must reach it after it thaws
 * (the two clusters merge and the version rule settles the engine), not leave it serving the engine for good. Two real
 * router processes, real simulated engines, the admin command line as an operator runs it.
 */
@Timeout(240)
class FrozenReplicaTest {
  /**
   * How long A may take to expel the frozen replica: {@code hazelcast.max.no.heartbeat.seconds} (15 in conf/cluster.xml)
   * and a few heartbeat checks more. B stays frozen until A has.
   */
  private static final long EXPEL_WAIT_S = 60;

  @Test
  void anEjectionMadeWhileAReplicaWasFrozenReachesItAfterItThaws() throws Exception {
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000))
        .put("serving", new JsonObject().put("drain_delay_s", 0))
        .put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 0.5)
            .put("prefix_block_chars", 16).put("prefix_blocks", 1)), (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    fleet.getJsonObject("cluster").put("members", new io.vertx.core.json.JsonArray()
        .add("127.0.0.1:" + h.basePort).add("127.0.0.1:" + (h.basePort + 1)));
    fleet.put("journal", new JsonObject().put("path", "-"));
    Path file = ReplicaProcess.writeFleet(fleet);
    try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
         ReplicaProcess b = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1))) {
      assertEquals("serving", b.engineState("D1"));
      assertEquals(2, a.state().getJsonArray("cluster_members").size(), "both replicas are members before the freeze");
      b.signal("STOP");
      a.awaitState(s -> s.getJsonArray("cluster_members").size() == 1, EXPEL_WAIT_S,
          () -> "A expels the frozen replica once its heartbeats stop for hazelcast.max.no.heartbeat.seconds: " + a.state());
      ReplicaProcess.AdminRun eject = ReplicaProcess.adminOutput(file, "eject", "D1");
      assertEquals(0, eject.exit(), "the admin command went through the replica that was not frozen: " + eject.text());
      assertEquals("ejected", a.engineState("D1"));
      for (int i = 0; i < 3; i++) {
        JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("max_tokens", 2)
            .put("prompt", "Prompt " + i + " of A, placed while B was frozen");
        assertEquals(200, a.post("/v1/completions", body), "A serves while B is frozen");
      }
      b.signal("CONT");
      awaitState(b, "D1", "ejected", () -> "the thawed replica: " + b.state());
      assertEquals("ejected", a.engineState("D1"), "and the other replica kept it");
      b.awaitState(s -> "closed".equals(s.getString("shared_state")), 60, () -> "the thawed replica's guard closed");
      assertEquals("closed", b.state().getString("shared_state"), "the thawed replica's guard closes again");
      b.awaitState(s -> {
        JsonObject snapshot = s.getJsonObject("placement").getJsonObject("prefix_snapshot");
        return snapshot != null && !"start".equals(snapshot.getString("on")) && "learned".equals(snapshot.getString("outcome"))
            && s.getJsonObject("placement").getInteger("prefixes_known") >= 3;
      }, 60, () -> "the thawed replica took the prefix index again and knows what A placed while it was frozen");
    } finally {
      h.close();
    }
  }

  /** Polls the replica until the engine is in {@code state} (up to a minute: the split clusters merge within seconds). */
  private static void awaitState(ReplicaProcess replica, String iid, String state, Supplier<String> why) throws InterruptedException {
    replica.awaitState(s -> state.equals(engineIn(s, iid)), 60, () -> iid + " never became " + state + " on " + why.get());
  }

  private static String engineIn(JsonObject state, String iid) {
    return state.getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid")))
        .findFirst().map(e -> e.getString("state")).orElse(null);
  }
}
