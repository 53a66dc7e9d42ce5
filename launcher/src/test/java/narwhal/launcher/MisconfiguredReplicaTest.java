package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A misconfigured replica does not pass as healthy (docs/operations.md#what-the-cluster-remembers): one whose configured
 * members answer but refuse it — another {@code cluster.name}, another {@code cluster.tls.enabled} — gives up at start
 * after {@code cluster.join_timeout_s} with a message naming both sides, while the cluster it tried to join keeps
 * serving; one whose peers are merely unreachable serves and shows fewer members than expected. Real router processes.
 */
@Timeout(300)
class MisconfiguredReplicaTest {
  @TempDir
  Path dir;

  private static JsonObject fleet(ClusterHarness h, int replicas) {
    JsonObject fleet = h.fleetJson();
    JsonArray members = new JsonArray();
    for (int i = 0; i < replicas; i++) members.add("127.0.0.1:" + (h.basePort + i));
    fleet.getJsonObject("cluster").put("members", members);
    return fleet;
  }

  @Test
  void aReplicaWithAnotherClusterNameGivesUpAndTheClusterKeepsServing() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { })) {
      Path file = ReplicaProcess.writeFleet(fleet(h, 3));
      try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
           ReplicaProcess b = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1))) {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> ReplicaProcess.start(file, ClusterHarness.TOKEN,
            "cluster.port=" + (h.basePort + 2), "cluster.name=clxy", "cluster.join_timeout_s=3"));
        String out = refused.getMessage();
        assertTrue(out.contains("answer but refuse this replica (127.0.0.1:" + (h.basePort + 2) + ", cluster.name \"clxy\"): their "
            + "cluster has another cluster.name"), out);
        assertTrue(out.contains("127.0.0.1:" + h.basePort), "the refusing member is named: " + out);
        assertTrue(out.contains("gave up after cluster.join_timeout_s = 3.0 s"), out);
        assertEquals(200, a.get("/ready").statusCode(), "the cluster it tried to join keeps serving");
        JsonObject cluster = a.state().getJsonObject("cluster");
        assertEquals(2, cluster.getInteger("members_seen"));
        assertEquals(3, cluster.getInteger("members_expected"));
        assertTrue(a.output().contains("with another cluster.name tried to join") || b.output().contains("with another cluster.name tried to join"),
            "a member of the cluster says who knocked:\n" + a.output() + "\n" + b.output());
      }
    }
  }

  @Test
  void aReplicaWithAnotherEventBusTlsSettingGivesUp() throws Exception {
    Path store = EventBusTlsTest.keyStore(dir);
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { })) {
      Path file = ReplicaProcess.writeFleet(fleet(h, 2));
      try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort)) {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> ReplicaProcess.start(file,
            Map.of("NARWHAL_ADMIN_TOKEN", ClusterHarness.TOKEN, "NARWHAL_CLUSTER_TLS_PASSWORD", EventBusTlsTest.PASSWORD),
            "cluster.port=" + (h.basePort + 1), "cluster.tls.enabled=true", "cluster.tls.key_store=" + store, "cluster.join_timeout_s=3"));
        String out = refused.getMessage();
        assertTrue(out.contains("the cluster's oldest member 127.0.0.1:" + h.basePort + " runs with cluster.tls.enabled = false, this replica (127.0.0.1:"
            + (h.basePort + 1) + ") with true"), out);
        assertEquals(200, a.get("/ready").statusCode());
      }
    }
  }

  @Test
  void aReplicaWhosePeersAreUnreachableServesAndShowsTheMembersMissing() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { })) {
      Path file = ReplicaProcess.writeFleet(fleet(h, 3));
      try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort)) {
        assertEquals(200, a.get("/ready").statusCode(), "a survivor never takes itself out");
        JsonObject cluster = a.state().getJsonObject("cluster");
        assertEquals(1, cluster.getInteger("members_seen"));
        assertEquals(3, cluster.getInteger("members_expected"));
        String metrics = a.get("/metrics").body();
        assertTrue(metrics.contains("narwhal_cluster_members 1.0"), metrics);
        assertTrue(metrics.contains("narwhal_cluster_members_expected 3.0"), metrics);
        assertTrue(metrics.contains("narwhal_cluster_refused 0.0"), metrics);
      }
    }
  }
}
