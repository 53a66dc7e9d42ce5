package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal admin} against replicas whose fleet files differ (docs/operations.md#admin-commands): its reply
 * gathers every replica's view and shows a column per replica where they differ; a command about an engine the
 * answering replica does not list reaches a replica that does instead of failing as "unknown engine"; every replica
 * that applies the change journals it, naming the replica that decided; the admin command's departure leaves no
 * warning in a replica's log; and with no replica reachable it says so. Three real router processes.
 */
@Timeout(300)
class AdminViewsTest {
  /** Each replica's fleet file leaves out one engine the two others list. */
  private static final List<String> LACKS = List.of("D1", "D2", "D3");

  @Test
  void repliesGatherEveryReplicasViewAndCommandsReachAReplicaThatListsTheEngine() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode", "D2:decode", "D3:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      JsonObject full = h.fleetJson();
      JsonArray members = new JsonArray();
      for (int i = 0; i < 3; i++) members.add("127.0.0.1:" + (h.basePort + i));
      full.getJsonObject("cluster").put("members", members);
      Path dir = Files.createTempDirectory("narwhal-admin-views");
      List<ReplicaProcess> replicas = new ArrayList<>();
      try {
        for (int i = 0; i < 3; i++) {
          String lacks = LACKS.get(i);
          JsonObject fleet = full.copy().put("engines", new JsonArray(full.getJsonArray("engines").stream()
              .filter(e -> !lacks.equals(((JsonObject) e).getString("iid"))).toList()));
          replicas.add(ReplicaProcess.start(ReplicaProcess.writeFleet(fleet), ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + i),
              "journal.path=" + dir.resolve("journal-" + i + ".jsonl")));
        }
        Path adminFleet = ReplicaProcess.writeFleet(full);
        ReplicaProcess.AdminRun state = ReplicaProcess.adminOutput(adminFleet, "state");
        assertEquals(0, state.exit(), state.text());
        assertTrue(state.text().contains("3 replicas, views differ"), state.text());
        List<String> names = replicas.stream().map(r -> r.state().getString("replica")).toList();
        List<String> addresses = replicas.stream().map(r -> r.state().getString("member")).toList();
        assertEquals(List.of("127.0.0.1:" + h.basePort, "127.0.0.1:" + (h.basePort + 1), "127.0.0.1:" + (h.basePort + 2)), addresses);
        assertTrue(state.text().contains("replicas differ (-: not in that replica's fleet file"), state.text());
        assertTrue(state.text().lines().anyMatch(l -> l.startsWith("ENGINE") && addresses.stream().allMatch(l::contains)),
            "a column per replica: " + state.text());
        String differ = state.text().substring(state.text().indexOf("replicas differ ("));
        String d1 = differ.lines().filter(l -> l.startsWith("D1 ")).findFirst().orElse("");
        assertEquals(List.of("D1", "-", "serving", "serving"), List.of(d1.trim().split("\\s+")), "D1, listed by B and C only: " + state.text());

        String drained = null;
        for (int tries = 0; tries < 6 && drained == null; tries++) {
          JsonObject answered = new JsonObject(ReplicaProcess.adminOutput(adminFleet, "state", "--json").text());
          String iid = LACKS.get(addresses.indexOf(answered.getString("member")));
          ReplicaProcess.AdminRun drain = ReplicaProcess.adminOutput(adminFleet, "drain", iid, "--json");
          assertEquals(0, drain.exit(), "drain " + iid + " is not refused as an unknown engine: " + drain.text());
          JsonObject reply = new JsonObject(drain.text());
          assertEquals("draining", ClusterHarness.engineIn(reply, iid).getString("state"));
          if (reply.containsKey("forwarded_by")) {
            drained = iid;
          } else {
            assertEquals(0, ReplicaProcess.admin(adminFleet, "undrain", iid));
          }
        }
        assertTrue(drained != null, "a command reached a replica that does not list its engine");

        String iid = drained;
        for (int i = 0; i < 3; i++) {
          if (LACKS.get(i).equals(iid)) continue;
          Path journal = dir.resolve("journal-" + i + ".jsonl");
          String replica = names.get(i);
          await("replica " + i + " journals the drain of " + iid, () -> !rows(journal, iid, "draining").isEmpty());
          JsonObject row = last(rows(journal, iid, "draining"));
          assertEquals(replica, row.getString("replica"), row.encode());
          assertTrue(names.contains(row.getString("decided_by")), "the deciding replica is named: " + row.encode());
        }
        List<String> deciders = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
          if (!LACKS.get(i).equals(iid)) deciders.add(last(rows(dir.resolve("journal-" + i + ".jsonl"), iid, "draining")).getString("decided_by"));
        }
        assertEquals(1, deciders.stream().distinct().count(), "one decider, named alike by every replica: " + deciders);

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (replicas.stream().noneMatch(r -> r.output().contains("(a narwhal admin command) left")) && System.nanoTime() < deadline) {
          Thread.sleep(100);
        }
        assertTrue(replicas.stream().anyMatch(r -> r.output().contains("(a narwhal admin command) left")), "a replica saw the admin "
            + "command leave:\n" + String.join("\n", replicas.stream().flatMap(r -> r.output().lines()
            .filter(l -> l.contains("lite") || l.startsWith("WARNING"))).toList()));
        Thread.sleep(2_000);
        for (ReplicaProcess r : replicas) {
          List<String> warnings = r.output().lines().filter(l -> l.startsWith("WARNING:"))
              .filter(l -> l.contains("Removing connection to endpoint") || l.contains("is suspected to be dead") || l.contains("existing endpoint"))
              .toList();
          assertEquals(List.of(), warnings, "an admin command's departure is no warning");
        }
      } finally {
        replicas.forEach(ReplicaProcess::close);
      }
    }
  }

  @Test
  void withNoReplicaReachableTheAdminCommandSaysSo() throws Exception {
    int port = ClusterPorts.base();
    JsonObject fleet = new JsonObject().put("model", ClusterHarness.MODEL)
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "D0").put("url", "http://127.0.0.1:9").put("role", "both")))
        .put("cluster", new JsonObject().put("enabled", true).put("name", "narwhal-test-nobody-" + System.nanoTime())
            .put("host", "127.0.0.1").put("port", port).put("members", new JsonArray().add("127.0.0.1:" + port)));
    ReplicaProcess.AdminRun run = ReplicaProcess.adminOutput(ReplicaProcess.writeFleet(fleet), "state");
    assertEquals(2, run.exit(), run.text());
    assertTrue(run.text().contains("no router replica of cluster \"" + fleet.getJsonObject("cluster").getString("name")
        + "\" is reachable at [127.0.0.1:" + port + "] (cluster.members)"), run.text());
    assertFalse(run.text().contains("Partition owner"), run.text());
  }

  private static List<JsonObject> rows(Path journal, String iid, String to) {
    try {
      if (!Files.exists(journal)) return List.of();
      return Files.readAllLines(journal).stream().filter(l -> l.contains("\"event\":\"engine_state\"")).map(JsonObject::new)
          .filter(r -> iid.equals(r.getString("iid")) && to.equals(r.getString("to"))).toList();
    } catch (java.io.IOException e) {
      return List.of();
    }
  }

  private static JsonObject last(List<JsonObject> rows) {
    return rows.get(rows.size() - 1);
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
