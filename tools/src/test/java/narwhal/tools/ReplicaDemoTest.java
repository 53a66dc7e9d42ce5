package narwhal.tools;

import narwhal.launcher.CommandFailure;

import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal demo --replicas N} builds what {@code deploy/} describes from the repository's own files: each replica
 * gets a fleet file of its own (port, journal) in one cluster of their own (its haproxy configuration: bench's
 * {@code HaproxyConfigTest}).
 */
class ReplicaDemoTest {
  private static final Path DEMO_FLEET = Path.of("..", "conf", "narwhal.json");

  @Test
  void eachReplicaGetsItsOwnPortAndJournalInOneClusterWithoutEmbeddedEngines(@TempDir Path dir) throws Exception {
    NarwhalConfig demo = NarwhalConfig.parse(Files.readString(DEMO_FLEET));
    List<JsonObject> fleets = ReplicaDemo.replicaFleets(demo, 3, dir, "narwhal-demo-test");

    assertEquals(3, fleets.size());
    Set<String> journals = new HashSet<>();
    for (int k = 0; k < 3; k++) {
      NarwhalConfig replica = NarwhalConfig.fromJson(fleets.get(k));
      assertEquals(demo.server().port() + k + 1, replica.server().port());
      assertEquals("127.0.0.1", replica.server().host());
      assertTrue(replica.cluster().enabled());
      assertEquals("narwhal-demo-test", replica.cluster().name());
      assertFalse(replica.sim().embedded(), "the demo runs the engines once, not in every replica");
      assertEquals(demo.engines(), replica.engines());
      journals.add(replica.journal().path());
    }
    assertEquals(3, journals.size(), "one journal per replica: " + journals);
  }

  @Test
  void aReplicaCountOutOfRangeIsRefusedNamingTheOption() throws Exception {
    NarwhalConfig demo = NarwhalConfig.parse(Files.readString(DEMO_FLEET));
    CommandFailure e = assertThrows(CommandFailure.class, () -> new ReplicaDemo(demo, 0));
    assertEquals("--replicas: 0 is not valid: expected 1 to " + ReplicaDemo.MAX_REPLICAS, e.getMessage());
  }
}
