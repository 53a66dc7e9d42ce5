package narwhal.bench.process;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The balancer the rolling-restart benchmark measures and the one of {@code narwhal demo --replicas N} are configured as
 * {@code deploy/haproxy.cfg} tells users to: its health check, retries and timeouts, with their own replicas as servers.
 */
class HaproxyConfigTest {
  private static final Path DEPLOY_CFG = Path.of("..", "deploy", "haproxy.cfg");

  private static List<String> section(List<String> lines, String header) {
    List<String> out = new ArrayList<>();
    boolean in = false;
    for (String line : lines) {
      if (line.isBlank() || line.startsWith("#")) continue;
      if (!Character.isWhitespace(line.charAt(0))) {
        in = line.strip().equals(header);
        continue;
      }
      if (in && !line.strip().startsWith("server ")) out.add(line.strip());
    }
    return out;
  }

  @Test
  void theBenchmarksDefaultsAndBackendAreDeployHaproxyCfgs() throws Exception {
    List<String> deploy = Files.readAllLines(Path.of("..", "deploy", "haproxy.cfg"));
    List<String> bench = HaproxyProcess.config(8000, 8001, List.of(new HaproxyProcess.Server("A", 9000))).lines().toList();
    assertEquals(section(deploy, "defaults"), section(bench, "defaults"));
    assertEquals(section(deploy, "backend routers"), section(bench, "backend routers"));
    assertTrue(section(bench, "backend routers").contains("option httpchk GET /ready"));
    assertTrue(bench.contains("  server A 127.0.0.1:9000 check"), String.join("\n", bench));
  }

  @Test
  void aServerWithAHealthPortIsCheckedThere() {
    List<String> bench = HaproxyProcess.config(8000, 8001, List.of(new HaproxyProcess.Server("A", 9000, 9100))).lines().toList();
    assertTrue(bench.contains("  server A 127.0.0.1:9000 check port 9100"), String.join("\n", bench));
  }

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
  void theDeployedConfigChecksReadyAndRetriesOnlyWhatNoReplicaAnswered() throws Exception {
    Map<String, List<String>> cfg = HaproxyConfig.sections(Files.readString(DEPLOY_CFG));
    List<String> backend = cfg.get(HaproxyConfig.BACKEND);
    List<String> defaults = cfg.get("defaults");
    assertTrue(backend.contains("  option httpchk GET /ready"), backend.toString());
    assertTrue(backend.contains("  http-check expect status 200"), backend.toString());
    assertTrue(defaults.contains("  retry-on conn-failure empty-response 503"), defaults.toString());
    assertTrue(defaults.contains("  option http-server-close"), "each request on a connection of its own: " + defaults);
    assertTrue(defaults.stream().noneMatch(l -> l.contains("response-timeout") || l.contains("all-retryable-errors")),
        "a replica that answers slowly still works on the request: " + defaults);
    assertTrue(defaults.stream().anyMatch(l -> l.startsWith("  timeout check ")), "a check timeout of its own, not inter: " + defaults);
  }

  @Test
  void aConfigWithoutTheRoutersBackendIsRefusedNamingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HaproxyConfig.forDemo("defaults\n  mode http\n", "0.0.0.0", 8000, List.of()));
    assertTrue(e.getMessage().contains("backend routers"), e.getMessage());
  }

  @Test
  void theJarCarriesDeployHaproxyCfg() throws Exception {
    assertEquals(Files.readString(DEPLOY_CFG), HaproxyConfig.deployed());
  }
}
