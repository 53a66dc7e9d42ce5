package narwhal.launcher;

import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.SharedState;
import narwhal.common.config.ClusterConfig;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Two real Hazelcast members with the replicas' config ({@link ClusterBootstrap#hazelcastConfig}) that formed two
 * clusters (the second started knowing only itself, as each side of a healed partition is) merge; each side holds the
 * newer entry of one key, so whichever side Hazelcast merges into the other, the merged maps keep the newer engine
 * state (by its version) and the longer streak, not the surviving side's entry.
 */
@Timeout(180)
class SplitBrainMergeTest {
  @Test
  void theMergedMapsKeepTheNewestStateAndTheLargerNumbersOfEitherSide() throws Exception {
    String name = "narwhal-merge-" + UUID.randomUUID();
    int portA = ClusterPorts.base();
    int portB = portA + 5;
    HazelcastInstance a = Hazelcast.newHazelcastInstance(config(name, portA, List.of("127.0.0.1:" + portA, "127.0.0.1:" + portB)));
    HazelcastInstance b = null;
    try {
      b = Hazelcast.newHazelcastInstance(config(name, portB, List.of("127.0.0.1:" + portB)));
      assertEquals(1, b.getCluster().getMembers().size(), "the second member forms a cluster of its own");
      assertEquals(1, a.getConfig().getMapConfig(SharedState.ENGINE_STATE_MAP).getBackupCount(), "the file's backups are kept");
      IMap<String, String> statesA = a.getMap(SharedState.ENGINE_STATE_MAP);
      IMap<String, String> statesB = b.getMap(SharedState.ENGINE_STATE_MAP);
      statesA.put("D1", state("D1", "ejected", 2_000, "breaker-a"));
      statesB.put("D1", state("D1", "quarantined", 1_000, "breaker-b"));
      statesA.put("D2", state("D2", "serving", 1_000, "breaker-a"));
      statesB.put("D2", state("D2", "ejected", 3_000, "breaker-b"));
      statesA.put("D3", state("D3", "drained", 5_000, "breaker-a"));
      statesB.put("D3", state("D3", "serving", 5_000, "breaker-b"));
      IMap<String, Long> countersA = a.getMap("__vertx.map.counter");
      IMap<String, Long> countersB = b.getMap("__vertx.map.counter");
      countersA.put("narwhal.streak.D1.connection", 2L);
      countersB.put("narwhal.streak.D1.connection", 1L);
      countersA.put("narwhal.streak.D2.connection", 0L);
      countersB.put("narwhal.streak.D2.connection", 2L);

      HazelcastInstance second = b;
      await("the two clusters merge", () -> a.getCluster().getMembers().size() == 2 && second.getCluster().getMembers().size() == 2);
      Map<String, String> newest = Map.of("D1", state("D1", "ejected", 2_000, "breaker-a"), "D2", state("D2", "ejected", 3_000, "breaker-b"),
          "D3", state("D3", "serving", 5_000, "breaker-b"));
      Map<String, Long> longest = Map.of("narwhal.streak.D1.connection", 2L, "narwhal.streak.D2.connection", 2L);
      for (HazelcastInstance member : List.of(a, b)) {
        await("the merged maps settle on " + member.getCluster().getLocalMember() + ", holding "
            + Map.copyOf(member.getMap(SharedState.ENGINE_STATE_MAP)) + " "
            + Map.copyOf(member.getMap("__vertx.map.counter")), () ->
            Map.copyOf(member.<String, String>getMap(SharedState.ENGINE_STATE_MAP)).equals(newest)
                && Map.copyOf(member.<String, Long>getMap("__vertx.map.counter")).equals(longest));
      }
    } finally {
      if (b != null) b.getLifecycleService().terminate();
      a.getLifecycleService().terminate();
    }
  }

  private static String state(String iid, String state, long changedMs, String origin) {
    return new JsonObject().put("iid", iid).put("state", state).put("cause", "admin").put("changed_ms", changedMs).put("origin", origin).encode();
  }

  private static Config config(String name, int port, List<String> members) {
    ClusterConfig cluster = NarwhalConfig.fromJson(new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "B0").put("url", "http://127.0.0.1:9")))
        .put("cluster", new JsonObject().put("enabled", true).put("name", name).put("host", "127.0.0.1").put("port", port)
            .put("members", new JsonArray(members)))).cluster();
    return ClusterBootstrap.hazelcastConfig(cluster, false);
  }

  interface Check {
    boolean holds();
  }

  private static void await(String what, Check check) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (check.holds()) return;
      Thread.sleep(100);
    }
    throw new AssertionError("not within 60 s: " + what);
  }
}
