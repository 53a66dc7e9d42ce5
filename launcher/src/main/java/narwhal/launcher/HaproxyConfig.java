package narwhal.launcher;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The haproxy configuration of {@code narwhal demo --replicas N}, made from {@code deploy/haproxy.cfg} so the demo runs
 * what an operator deploys: its {@code defaults} and {@code backend routers} sections as they are (health check,
 * retries, timeouts), its {@code server} lines replaced by the demo's replicas, a frontend on the demo's port and the
 * log on standard error.
 */
final class HaproxyConfig {
  static final String BACKEND = "backend routers";

  private HaproxyConfig() {
  }

  /** A replica behind the balancer. */
  record Server(String name, String host, int port) {
  }

  static String forDemo(String deployCfg, String bindHost, int bindPort, List<Server> servers) {
    Map<String, List<String>> sections = sections(deployCfg);
    List<String> defaults = sections.get("defaults");
    List<String> backend = sections.get(BACKEND);
    if (defaults == null || backend == null) {
      throw new CommandFailure("deploy/haproxy.cfg: expected a \"defaults\" and a \"" + BACKEND + "\" section");
    }
    StringBuilder out = new StringBuilder()
        .append("global\n  log stderr format raw local0 info\n  maxconn 4000\n")
        .append("defaults\n");
    defaults.forEach(line -> out.append(line).append('\n'));
    out.append("frontend narwhal\n  bind ").append(bindHost).append(':').append(bindPort).append("\n  default_backend routers\n")
        .append(BACKEND).append('\n');
    backend.stream().filter(line -> !line.strip().startsWith("server ")).forEach(line -> out.append(line).append('\n'));
    for (Server s : servers) out.append("  server ").append(s.name()).append(' ').append(s.host()).append(':').append(s.port()).append(" check\n");
    return out.toString();
  }

  /** Section header → its indented lines (comments and blank lines left out). */
  static Map<String, List<String>> sections(String cfg) {
    Map<String, List<String>> sections = new LinkedHashMap<>();
    List<String> current = null;
    for (String line : cfg.split("\n")) {
      String stripped = line.strip();
      if (stripped.isEmpty() || stripped.startsWith("#")) continue;
      if (!Character.isWhitespace(line.charAt(0))) {
        current = new ArrayList<>();
        sections.put(stripped.replaceAll("\\s+", " "), current);
      } else if (current != null) {
        current.add("  " + stripped);
      }
    }
    return sections;
  }
}
