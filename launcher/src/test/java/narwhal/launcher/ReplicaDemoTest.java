package narwhal.launcher;

import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal demo --replicas N} builds what {@code deploy/} describes from the repository's own files: the haproxy
 * configuration keeps {@code deploy/haproxy.cfg}'s health check, retries and timeouts with the demo's replicas as its
 * servers, and each replica gets a fleet file of its own (port, journal) in one cluster of their own.
 */
class ReplicaDemoTest {
  private static final Path DEPLOY_CFG = Path.of("..", "deploy", "haproxy.cfg");
  private static final Path DEMO_FLEET = Path.of("..", "conf", "narwhal.json");

  @Test
  void theDemosHaproxyKeepsTheDeployedSettingsAndListsItsReplicas() throws Exception {
    String deployed = Files.readString(DEPLOY_CFG);
    String demo = HaproxyConfig.forDemo(deployed, "0.0.0.0", 8000, List.of(new HaproxyConfig.Server("replica1", "127.0.0.1", 8001),
        new HaproxyConfig.Server("replica2", "127.0.0.1", 8002)));

    Map<String, List<String>> ours = HaproxyConfig.sections(demo);
    Map<String, List<String>> theirs = HaproxyConfig.sections(deployed);
    assertEquals(theirs.get("defaults"), ours.get("defaults"));
    List<String> backend = ours.get(HaproxyConfig.BACKEND);
    assertEquals(theirs.get(HaproxyConfig.BACKEND).stream().filter(l -> !l.startsWith("  server ")).toList(),
        backend.stream().filter(l -> !l.startsWith("  server ")).toList());
    assertEquals(List.of("  server replica1 127.0.0.1:8001 check", "  server replica2 127.0.0.1:8002 check"),
        backend.stream().filter(l -> l.startsWith("  server ")).toList());
    assertTrue(ours.get("frontend narwhal").contains("  bind 0.0.0.0:8000"), demo);
    assertTrue(ours.get("global").contains("  log stderr format raw local0 info"), demo);
  }

  @Test
  void theDeployedConfigChecksReadyAndRetriesOnlyConnectionFailuresAndRefusals() throws Exception {
    Map<String, List<String>> cfg = HaproxyConfig.sections(Files.readString(DEPLOY_CFG));
    List<String> backend = cfg.get(HaproxyConfig.BACKEND);
    List<String> defaults = cfg.get("defaults");
    assertTrue(backend.contains("  option httpchk GET /ready"), backend.toString());
    assertTrue(backend.contains("  http-check expect status 200"), backend.toString());
    assertTrue(defaults.contains("  retry-on conn-failure 503"), defaults.toString());
    assertTrue(defaults.stream().anyMatch(l -> l.startsWith("  timeout check ")), "a check timeout of its own, not inter: " + defaults);
  }

  @Test
  void aConfigWithoutTheRoutersBackendIsRefusedNamingIt() {
    CommandFailure e = assertThrows(CommandFailure.class, () -> HaproxyConfig.forDemo("defaults\n  mode http\n", "0.0.0.0", 8000, List.of()));
    assertTrue(e.getMessage().contains("backend routers"), e.getMessage());
  }

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
    CommandFailure e = assertThrows(CommandFailure.class, () -> new ReplicaDemo(demo, 0, DEPLOY_CFG));
    assertEquals("--replicas: 0 is not valid: expected 1 to " + ReplicaDemo.MAX_REPLICAS, e.getMessage());
  }
}
