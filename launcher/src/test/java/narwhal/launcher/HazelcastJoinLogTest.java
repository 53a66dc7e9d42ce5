package narwhal.launcher;

import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ClusterConfig;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Pins the two join-refusal lines {@link HazelcastJoinLog} matches against the Hazelcast the build ships: two real
 * members on 127.0.0.1 with different cluster names, configured as replicas are, the second knocking at the first. The
 * refused joiner's line names the member that refused it, the knocked-at member's line names the stranger, each read
 * by the reader of its own cluster name.
 */
@Timeout(120)
class HazelcastJoinLogTest {

  private static ClusterConfig cluster(String name, int port, int peer) {
    JsonObject fleet = new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "x").put("url", "http://127.0.0.1:9")))
        .put("cluster", new JsonObject().put("enabled", true).put("name", name).put("host", "127.0.0.1").put("port", port)
            .put("members", new JsonArray().add("127.0.0.1:" + peer)));
    return NarwhalConfig.fromJson(fleet).cluster();
  }

  private static int freePort() {
    return ClusterPorts.unused();
  }

  @Test
  void aJoinRefusedOverTheClusterNameIsReadOnBothSides() throws Exception {
    int first = freePort();
    int second = freePort();
    CompletableFuture<String> refusedBy = new CompletableFuture<>();
    CompletableFuture<String> stranger = new CompletableFuture<>();
    HazelcastJoinLog theirs = HazelcastJoinLog.listen("pin-first", (kind, address) -> {
      if (kind == HazelcastJoinLog.Kind.STRANGER) stranger.complete(address);
    });
    HazelcastJoinLog mine = HazelcastJoinLog.listen("pin-second", (kind, address) -> {
      if (kind == HazelcastJoinLog.Kind.REFUSED) refusedBy.complete(address);
    });
    HazelcastInstance a = null;
    HazelcastInstance b = null;
    // Tests of the admin command, in this JVM, turn Hazelcast's log off for the process; a replica logs it at WARNING.
    Logger hazelcastLog = Logger.getLogger("com.hazelcast");
    Level level = hazelcastLog.getLevel();
    hazelcastLog.setLevel(Level.WARNING);
    try {
      a = Hazelcast.newHazelcastInstance(ClusterBootstrap.hazelcastConfig(cluster("pin-first", first, second), false));
      b = Hazelcast.newHazelcastInstance(ClusterBootstrap.hazelcastConfig(cluster("pin-second", second, first), false));
      assertEquals("127.0.0.1:" + first, refusedBy.get(60, TimeUnit.SECONDS), "the joiner reads who refused it");
      assertEquals("127.0.0.1:" + second, stranger.get(60, TimeUnit.SECONDS), "the member knocked at reads who knocked");
      assertEquals(1, a.getCluster().getMembers().size(), "the refused joiner is not a member");
    } finally {
      if (b != null) b.shutdown();
      if (a != null) a.shutdown();
      theirs.close();
      mine.close();
      hazelcastLog.setLevel(level);
    }
  }
}
