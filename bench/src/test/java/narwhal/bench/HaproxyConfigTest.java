package narwhal.bench;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The balancer the rolling-restart benchmark measures is configured as {@code deploy/haproxy.cfg} tells users to. */
class HaproxyConfigTest {
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
}
