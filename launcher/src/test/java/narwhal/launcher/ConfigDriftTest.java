package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replicas whose fleet files differ on the settings they must share (docs/operations.md#what-the-cluster-remembers)
 * do not drift silently: the difference, by key and replica, is in every replica's {@code /narwhal/state} and
 * {@code narwhal_config_drift*} gauges and warned in the log at start and on a reload, and a reload that fixes it
 * clears it; the failure streaks the cluster shares are judged by the oldest replica's {@code recovery.eject_after},
 * whichever replica counts the failure. Real router processes on one Hazelcast cluster.
 */
@Timeout(300)
class ConfigDriftTest {

  private static JsonObject fleet(ClusterHarness h, int replicas) {
    JsonObject fleet = h.fleetJson();
    JsonArray members = new JsonArray();
    for (int i = 0; i < replicas; i++) members.add("127.0.0.1:" + (h.basePort + i));
    fleet.getJsonObject("cluster").put("members", members);
    return fleet;
  }

  @Test
  void aReplicaWithOtherSharedSettingsIsShownWarnedAndClearedByAReload() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode", "D2:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      JsonObject full = fleet(h, 3);
      JsonObject shared = full.copy();
      shared.put("engines", new JsonArray(full.getJsonArray("engines").stream().filter(e -> !"D2".equals(((JsonObject) e).getString("iid"))).toList()));
      Path file = ReplicaProcess.writeFleet(shared);
      JsonObject odd = full.copy();
      odd.getJsonObject("recovery").put("eject_after", 5);
      Path oddFile = ReplicaProcess.writeFleet(odd);
      Path bFile = ReplicaProcess.writeFleet(shared);
      try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
           ReplicaProcess b = ReplicaProcess.start(bFile, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1));
           ReplicaProcess c = ReplicaProcess.start(oddFile, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 2))) {
        String cMember = "127.0.0.1:" + (h.basePort + 2);
        assertTrue(c.output().contains("config drift (at start)"), "the odd replica warns at start:\n" + c.output());
        assertTrue(c.output().contains("replica " + cMember), c.output());
        for (ReplicaProcess r : List.of(a, b, c)) {
          await("every replica shows C's drift", () -> drifted(r, cMember));
          JsonObject drift = r.state().getJsonObject("config_drift");
          assertEquals("127.0.0.1:" + h.basePort, drift.getString("reference"), "compared with the oldest replica: " + drift);
          JsonObject differs = drift.getJsonArray("replicas").getJsonObject(0);
          assertEquals(new JsonArray().add("engines.D2").add("recovery.eject_after"), differs.getJsonArray("keys"),
              "names only: " + drift);
          assertEquals(1, drift.getJsonArray("replicas").size(), drift.encode());
          assertEquals(3, drift.getJsonObject("streaks_judged_by").getInteger("eject_after"),
              "the streaks are judged by the oldest replica's eject_after, C's 5 too: " + drift);
          String metrics = r.get("/metrics").body();
          assertTrue(metrics.contains("narwhal_config_drift 1.0"), metrics);
          assertTrue(metrics.contains("narwhal_config_drift_replicas{key=\"engines\"} 1.0"), metrics);
          assertTrue(metrics.contains("narwhal_config_drift_replicas{key=\"recovery.eject_after\"} 1.0"), metrics);
          assertTrue(metrics.contains("narwhal_config_drift_replicas{key=\"serving.max_attempts\"} 0.0"), metrics);
        }
        assertTrue(a.output().contains("config drift"), "the others warn when they see it:\n" + a.output());

        Files.writeString(oddFile, shared.encodePrettily());
        for (ReplicaProcess r : List.of(a, b, c)) {
          await("the reload that fixed C's file clears the drift", () -> r.state() != null
              && !r.state().getJsonObject("config_drift").getBoolean("drifted"));
          assertTrue(r.get("/metrics").body().contains("narwhal_config_drift 0.0"));
        }
        assertTrue(a.output().contains("config drift over"), a.output());

        JsonObject more = shared.copy();
        more.put("serving", more.getJsonObject("serving", new JsonObject()).copy().put("max_attempts", 2));
        Files.writeString(bFile, more.encodePrettily());
        await("B's reload is warned", () -> b.output().contains("config drift (at reload)"));
        assertTrue(b.output().contains("on serving.max_attempts"), b.output());
        await("A shows B's drift", () -> drifted(a, "127.0.0.1:" + (h.basePort + 1)));
      }
    }
  }

  @Test
  void theSharedStreakIsJudgedByTheOldestReplicasEjectAfterWhicheverReplicaCountsIt() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      JsonObject oldest = fleet(h, 2);
      oldest.getJsonObject("recovery").put("eject_after", 5);
      JsonObject eager = oldest.copy();
      eager.getJsonObject("recovery").put("eject_after", 2);
      try (ReplicaProcess a = ReplicaProcess.start(ReplicaProcess.writeFleet(oldest), ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
           ReplicaProcess b = ReplicaProcess.start(ReplicaProcess.writeFleet(eager), ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1))) {
        await("B sees both replicas", () -> b.state().getJsonObject("cluster").getInteger("members_seen") == 2);
        ClusterHarness.await(h.engine("D0").stopListening());
        JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", 4);
        for (int failures = 1; failures <= 4; failures++) {
          b.post("/v1/completions", body);
          int counted = failures;
          await("failure " + counted + " counted", () -> streak(b) >= counted || !"serving".equals(b.engineState("D0")));
          assertEquals("serving", b.engineState("D0"), "D0 serves on at a streak of " + counted
              + " (B's own eject_after is 2, the oldest replica's 5): " + b.state());
        }
        b.post("/v1/completions", body);
        await("the fifth connection failure ejects it", () -> "ejected".equals(b.engineState("D0")));
        assertEquals("connection", engine(b, "D0").getString("cause"));
        assertEquals(5, b.state().getJsonObject("config_drift").getJsonObject("streaks_judged_by").getInteger("eject_after"),
            "B says whose rule it judged by");
        await("on both replicas", () -> "ejected".equals(a.engineState("D0")));
      }
    }
  }

  private static boolean drifted(ReplicaProcess r, String member) {
    JsonObject state = r.state();
    if (state == null || state.getJsonObject("config_drift") == null) return false;
    return state.getJsonObject("config_drift").getJsonArray("replicas").stream().map(JsonObject.class::cast)
        .anyMatch(d -> member.equals(d.getString("member")));
  }

  private static int streak(ReplicaProcess r) {
    return engine(r, "D0").getJsonObject("streaks").getInteger("connection");
  }

  private static JsonObject engine(ReplicaProcess r, String iid) {
    return r.state().getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid")))
        .findFirst().orElseThrow();
  }

  private static void await(String what, BooleanSupplier check) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      try {
        if (check.getAsBoolean()) return;
      } catch (RuntimeException notYet) {
        // a replica between answers
      }
      Thread.sleep(100);
    }
    throw new AssertionError("not within 60 s: " + what);
  }
}
