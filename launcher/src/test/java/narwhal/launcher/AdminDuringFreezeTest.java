package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal admin eject} sent the moment one of three replicas is frozen (SIGSTOP), before the others have expelled
 * it. Joining the cluster then would connect the command to the frozen replica, which never answers Hazelcast's protocol:
 * Hazelcast's I/O thread spins a core on that connection until the member is expelled (hazelcast/hazelcast#26473), and
 * on a small host the surviving replicas' shared-state operations time out meanwhile. The command must instead notice
 * the frozen replica, wait (idle) until the cluster no longer lists it, join through the others and carry the command
 * out; the thawed replica gets the decision. Measured: the command's own CPU time (idle waiting costs next to nothing,
 * the spin about one core for the whole wait), its output, the states. Real router processes, real simulated engines,
 * the admin command as its own JVM.
 */
@Timeout(300)
class AdminDuringFreezeTest {
  /** The command's CPU time bound: a JVM start, a join and a reply take 2–5 s here; the spin adds about 13 s. */
  private static final Duration CPU_BOUND = Duration.ofSeconds(9);

  @Test
  void anAdminCommandSentWhileAReplicaIsFrozenWaitsIdleForTheExpulsionAndTheDecisionReachesEveryone() throws Exception {
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.2).put("readmit_every", 100_000).put("liveness_every", 100_000))
        .put("serving", new JsonObject().put("drain_delay_s", 0)), (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    JsonArray members = new JsonArray();
    for (int i = 0; i < 3; i++) members.add("127.0.0.1:" + (h.basePort + i));
    fleet.getJsonObject("cluster").put("members", members);
    fleet.put("journal", new JsonObject().put("path", "-"));
    Path file = ReplicaProcess.writeFleet(fleet);
    try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
         ReplicaProcess b = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1));
         ReplicaProcess c = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 2))) {
      for (ReplicaProcess r : List.of(a, b, c)) awaitTrue(() -> membersSeen(r) == 3, "3 members on every replica");
      c.signal("STOP");

      List<String> command = new ArrayList<>(List.of(ReplicaProcess.javaCommand(), "-Xmx128m", "-cp", ReplicaProcess.classpath(),
          NarwhalCommand.class.getName(), "admin", "eject", "D1", "--fleet", file.toString(), "--timeout", "60"));
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
      builder.environment().put("NARWHAL_ADMIN_TOKEN", ClusterHarness.TOKEN);
      Process admin = builder.start();
      CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
        try {
          return new String(admin.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
          return e.toString();
        }
      });
      // its CPU time, read until it exits (the kernel forgets it then)
      Duration cpu = Duration.ZERO;
      while (admin.isAlive()) {
        cpu = admin.toHandle().info().totalCpuDuration().orElse(cpu);
        Thread.sleep(100);
      }
      assertTrue(admin.waitFor(150, TimeUnit.SECONDS), "the admin command ends");
      String text = output.get(10, TimeUnit.SECONDS);
      System.out.println("AdminDuringFreezeTest: the admin command used " + cpu.toMillis() + " ms of CPU");
      assertEquals(0, admin.exitValue(), text);
      assertTrue(text.contains("eject D1: done"), text);
      assertTrue(cpu.compareTo(CPU_BOUND) < 0, "the command waited idle: " + cpu.toMillis() + " ms of CPU (bound "
          + CPU_BOUND.toMillis() + " ms)\n" + text);
      assertTrue(text.contains("127.0.0.1:" + (h.basePort + 2) + " accept(s) connections but does not answer"),
          "the command names the frozen replica it waits for:\n" + text);
      assertEquals("ejected", a.engineState("D1"));
      assertEquals("ejected", b.engineState("D1"));

      c.signal("CONT");
      awaitTrue(() -> "ejected".equals(c.engineState("D1")) && membersSeen(c) == 3, "the thawed replica shows the ejection: " + c.state());
      assertEquals("ejected", a.engineState("D1"));
      assertEquals("ejected", b.engineState("D1"));
    } finally {
      h.close();
    }
  }

  private static int membersSeen(ReplicaProcess replica) {
    JsonObject state = replica.state();
    return state == null ? -1 : state.getJsonObject("cluster").getInteger("members_seen", -1);
  }

  interface Check {
    boolean holds() throws Exception;
  }

  /** Polls every 200 ms for up to two minutes (the split clusters merge within seconds of the thaw). */
  private static void awaitTrue(Check check, String what) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (System.nanoTime() < deadline) {
      if (check.holds()) return;
      Thread.sleep(200);
    }
    throw new AssertionError("not within 2 minutes: " + what);
  }
}
