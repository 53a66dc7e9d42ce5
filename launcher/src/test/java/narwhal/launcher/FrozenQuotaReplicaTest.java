package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tenant's quota across two real router processes when one of them stops answering (docs/operations.md#sharing-a-fleet):
 * frozen (SIGSTOP), its unspent lease is its own while its last report is fresh, then its reported use stays counted
 * and it is claimed at its share, so the other admits no more than the quota leaves; killed (kill -9) and expelled from the cluster, its use still counts until it leaves the minute.
 * Over any minute, the two together never admit more than the quota.
 */
@Timeout(240)
class FrozenQuotaReplicaTest {
  private static final int PER_MINUTE = 20;
  private static final String KEY = "sk-metered-frozen";

  @Test
  void aFrozenThenKilledReplicasUseStaysCountedAndTheQuotaHoldsAcrossBoth() throws Exception {
    Path keys = Files.createTempFile("narwhal-tenant", ".keys");
    Files.writeString(keys, KEY);
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json.put("tenants", new JsonObject()
        .put("metered", new JsonObject().put("api_key_file", keys.toString()).put("requests_per_minute", PER_MINUTE))), (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    fleet.getJsonObject("cluster").put("members", new JsonArray().add("127.0.0.1:" + h.basePort).add("127.0.0.1:" + (h.basePort + 1)));
    fleet.put("journal", new JsonObject().put("path", "-"));
    Path file = ReplicaProcess.writeFleet(fleet);
    List<Long> admittedAt = new ArrayList<>();
    try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
         ReplicaProcess b = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1))) {
      for (ReplicaProcess r : List.of(a, b)) r.awaitState(s -> heard(s) == 2, 60, () -> "each replica hears both replicas' reports");
      int viaB = send(b, PER_MINUTE / 2, admittedAt);
      assertTrue(viaB >= 1, "B admits from its share");
      a.awaitState(s -> used(s) >= viaB, 30, () -> "A counts what B admitted");
      b.signal("STOP");
      // while B's last report is fresh its unspent lease is B's to use: A waits for it to go silent (3 s)
      a.awaitState(s -> heard(s) == 1, 30, () -> "A counts B as silent");
      int viaA = send(a, PER_MINUTE, admittedAt);
      assertTrue(viaA >= 1, "A still admits what the quota leaves");
      assertTrue(viaA + viaB <= PER_MINUTE, "with B frozen, A admits what B's counted use and claim leave: " + viaA + " + " + viaB);
      b.signal("KILL");
      a.awaitState(s -> s.getJsonArray("cluster_members").size() == 1, 90, () -> "A expels the killed replica");
      send(a, PER_MINUTE, admittedAt);
      // the replicas count in one-second buckets: a use leaves between 59 and 60 s after it; look at 58 s windows
      for (long t : admittedAt) {
        long inMinute = admittedAt.stream().filter(u -> u > t - 58_000_000_000L && u <= t).count();
        assertTrue(inMinute <= PER_MINUTE, "at most the quota in any minute across both replicas: " + inMinute);
      }
      assertEquals(true, a.state().getJsonObject("flow").getJsonObject("quotas").getJsonObject("tenants").containsKey("metered"));
    } finally {
      h.close();
    }
  }

  /**
   * Sends {@code n} completions with the tenant's key to {@code replica}, a refused one once more a second later (as its
   * {@code Retry-After: 1} asks while the quota is left cluster-wide: a replica's lease follows its demand at the next
   * settle); records when each admitted one ended.
   */
  private static int send(ReplicaProcess replica, int n, List<Long> admittedAt) throws InterruptedException {
    int admitted = 0;
    for (int i = 0; i < n; i++) {
      JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "quota " + i).put("max_tokens", 2);
      int status = replica.post("/v1/completions", body, KEY);
      if (status == 429) {
        Thread.sleep(1_100);
        status = replica.post("/v1/completions", body, KEY);
      }
      if (status == 200) {
        admitted++;
        admittedAt.add(System.nanoTime());
      } else {
        assertEquals(429, status, "refused over the quota, not failed");
      }
    }
    return admitted;
  }

  private static int heard(JsonObject state) {
    JsonObject flow = state.getJsonObject("flow");
    return flow == null ? 0 : flow.getJsonObject("quotas").getInteger("replicas_heard", 0);
  }

  private static long used(JsonObject state) {
    JsonObject tenant = state.getJsonObject("flow").getJsonObject("quotas").getJsonObject("tenants").getJsonObject("metered");
    return tenant == null ? 0 : tenant.getLong("requests_last_minute", 0L);
  }
}
