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
 * Operator decisions outlive the replicas when {@code cluster.decisions_path} is set (docs/operations.md#what-the-cluster-remembers):
 * a drain, an admin ejection and a quarantine made through a cluster of real router processes are still in force
 * after every replica was killed and one was started again; without the key the first replica says it starts from
 * its fleet file alone.
 */
@Timeout(300)
class KeptDecisionsTest {

  @Test
  void drainsEjectionsAndQuarantinesSurviveAStopOfEveryReplica() throws Exception {
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode", "D2:decode", "D3:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000))
        .put("serving", new JsonObject().put("drain_delay_s", 0)), (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    fleet.getJsonObject("cluster").put("members", new JsonArray().add("127.0.0.1:" + h.basePort).add("127.0.0.1:" + (h.basePort + 1))
        .add("127.0.0.1:" + (h.basePort + 2)));
    Path file = ReplicaProcess.writeFleet(fleet);
    Path dir = Files.createTempDirectory("narwhal-decisions");
    long until;
    try {
      try (ReplicaProcess a = start(file, dir, 0); ReplicaProcess b = start(file, dir, 1); ReplicaProcess c = start(file, dir, 2)) {
        assertEquals(0, ReplicaProcess.admin(file, "drain", "D1"));
        assertEquals(0, ReplicaProcess.admin(file, "eject", "D2"));
        assertEquals(0, ReplicaProcess.admin(file, "quarantine", "D3", "--seconds", "600"));
        until = engine(a, "D3").getLong("quarantine_until_ms");
        for (int i = 0; i < 3; i++) {
          Path kept = dir.resolve("decisions-" + i + ".json");
          await("replica " + i + " keeps the three decisions in " + kept, () -> decisions(kept) == 3);
        }
        assertEquals("draining", c.engineState("D1"));
      }
      // every replica was killed (SIGKILL): the one started first restores what its file kept
      try (ReplicaProcess b = start(file, dir, 1)) {
        assertEquals("draining", b.engineState("D1"), "the drain outlived the replicas: " + b.state());
        assertEquals("ejected", b.engineState("D2"));
        assertEquals("admin", engine(b, "D2").getString("cause"));
        assertEquals("quarantined", b.engineState("D3"));
        assertEquals(until, engine(b, "D3").getLong("quarantine_until_ms"), "the quarantine keeps its end");
        assertEquals("serving", b.engineState("D0"));
        assertTrue(b.output().contains("starts it from " + dir.resolve("decisions-1.json")), b.output());
        Path journal = dir.resolve("journal-1.jsonl");
        await("the journal says what the cluster started from", () -> read(journal).contains("\"event\":\"cluster_start\""));
        assertTrue(read(journal).contains("\"from\":\"decisions_file\""), read(journal));
      }
    } finally {
      h.close();
    }
  }

  /**
   * The first replica up restores nothing (its file keeps no decision, e.g. a drain was undone after the second
   * replica had stopped), so the state map stays empty; the second replica up must not take the map's emptiness for
   * a cluster nobody started and restore its own stale file over the cluster.
   */
  @Test
  void aReplicaStartingAfterTheFirstNeverRestoresItsOwnStaleFile() throws Exception {
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000)), (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    fleet.getJsonObject("cluster").put("members", new JsonArray().add("127.0.0.1:" + h.basePort).add("127.0.0.1:" + (h.basePort + 1)));
    Path file = ReplicaProcess.writeFleet(fleet);
    Path dir = Files.createTempDirectory("narwhal-decisions");
    Files.writeString(dir.resolve("decisions-1.json"), new JsonObject().put("format", 1).put("written_by", "breaker-stale")
        .put("decisions", new JsonArray().add(new JsonObject().put("iid", "D1").put("state", "draining").put("cause", "admin")
            .put("changed_ms", System.currentTimeMillis() - 60_000).put("origin", "breaker-stale"))).encode());
    try (ReplicaProcess a = start(file, dir, 0)) {
      assertTrue(a.output().contains("starts it from " + dir.resolve("decisions-0.json") + " (cluster.decisions_path): no operator decision in force"),
          a.output());
      try (ReplicaProcess b = start(file, dir, 1)) {
        assertTrue(!b.output().contains("starts it from"), "only the first replica up starts the cluster's state: " + b.output());
        assertEquals("serving", b.engineState("D1"), "the stale drain came back: " + b.state());
        assertEquals("serving", a.engineState("D1"), "the stale drain came back: " + a.state());
      }
    } finally {
      h.close();
    }
  }

  @Test
  void withoutADecisionsFileTheFirstReplicaSaysItStartsFromItsFleetFile() throws Exception {
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { });
    Path file = ReplicaProcess.writeFleet(h.fleetJson());
    Path dir = Files.createTempDirectory("narwhal-decisions");
    try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort,
        "journal.path=" + dir.resolve("journal.jsonl"))) {
      assertTrue(a.output().contains("operator decisions made before a stop of every replica are not kept (cluster.decisions_path is not set)"),
          a.output());
      await("the journal says what the cluster started from", () -> read(dir.resolve("journal.jsonl")).contains("\"from\":\"fleet_file\""));
    } finally {
      h.close();
    }
  }

  private static ReplicaProcess start(Path fleet, Path dir, int i) throws java.io.IOException {
    return ReplicaProcess.start(fleet, ClusterHarness.TOKEN, "cluster.port=" + (portOf(fleet) + i),
        "cluster.decisions_path=" + dir.resolve("decisions-" + i + ".json"), "journal.path=" + dir.resolve("journal-" + i + ".jsonl"));
  }

  private static int portOf(Path fleet) throws java.io.IOException {
    return new JsonObject(Files.readString(fleet)).getJsonObject("cluster").getInteger("port");
  }

  private static JsonObject engine(ReplicaProcess r, String iid) {
    return r.state().getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid")))
        .findFirst().orElseThrow();
  }

  private static int decisions(Path kept) {
    String text = read(kept);
    return text.isEmpty() ? 0 : new JsonObject(text).getJsonArray("decisions").size();
  }

  private static String read(Path file) {
    try {
      return Files.exists(file) ? Files.readString(file) : "";
    } catch (java.io.IOException e) {
      return "";
    }
  }

  private static void await(String what, BooleanSupplier check) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (check.getAsBoolean()) return;
      Thread.sleep(100);
    }
    throw new AssertionError("not within 60 s: " + what);
  }
}
