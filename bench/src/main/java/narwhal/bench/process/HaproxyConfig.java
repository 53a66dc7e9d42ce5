package narwhal.bench.process;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one source of Narwhal's haproxy settings: {@code deploy/haproxy.cfg}, which the build copies into the jar
 * ({@value #RESOURCE}). {@code narwhal demo --replicas N} and the benchmarks behind a balancer run what an operator
 * deploys: its {@code global}, {@code defaults} and {@code backend routers} sections as they are (health check,
 * retries, timeouts), its {@code server} lines replaced by their own replicas, a frontend on their own port and, for
 * the benchmarks, a stats listener.
 */
public final class HaproxyConfig {
  public static final String BACKEND = "backend routers";
  static final String RESOURCE = "/deploy/haproxy.cfg";

  private HaproxyConfig() {
  }

  /**
   * A replica behind the balancer; {@code checkPort} is where its health check goes (its {@code server.health_port}),
   * 0 for its client port.
   */
  public record Server(String name, String host, int port, int checkPort) {
    public Server(String name, String host, int port) {
      this(name, host, port, 0);
    }
  }

  /** {@code deploy/haproxy.cfg} as this build carries it. */
  public static String deployed() {
    try (InputStream in = HaproxyConfig.class.getResourceAsStream(RESOURCE)) {
      if (in == null) throw new IllegalStateException(RESOURCE + " is missing from the build");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The demo's configuration: {@code deployCfg}'s settings, a frontend on {@code bindHost:bindPort}, {@code servers}. */
  public static String forDemo(String deployCfg, String bindHost, int bindPort, List<Server> servers) {
    return render(deployCfg, bindHost, bindPort, 0, servers);
  }

  /**
   * {@code deployCfg}'s {@code global} (or just a log on standard error), {@code defaults} and {@code backend routers}
   * without its server lines; a frontend on {@code bindHost:bindPort}; a CSV stats page on {@code statsPort} unless 0;
   * one checked {@code server} line per replica. An {@link IllegalArgumentException} names a missing section.
   */
  public static String render(String deployCfg, String bindHost, int bindPort, int statsPort, List<Server> servers) {
    return render(deployCfg, bindHost, bindPort, statsPort, servers, List.of());
  }

  /** As above, with {@code frontendLines} (indented settings) added to the frontend: logging, for the benchmarks. */
  public static String render(String deployCfg, String bindHost, int bindPort, int statsPort, List<Server> servers,
                              List<String> frontendLines) {
    Map<String, List<String>> sections = sections(deployCfg);
    List<String> global = sections.getOrDefault("global", List.of("  log stderr format raw local0 info"));
    List<String> defaults = sections.get("defaults");
    List<String> backend = sections.get(BACKEND);
    if (defaults == null || backend == null) {
      throw new IllegalArgumentException("deploy/haproxy.cfg: expected a \"defaults\" and a \"" + BACKEND + "\" section");
    }
    StringBuilder out = new StringBuilder("global\n");
    global.forEach(line -> out.append(line).append('\n'));
    out.append("defaults\n");
    defaults.forEach(line -> out.append(line).append('\n'));
    out.append("frontend narwhal\n  bind ").append(bindHost).append(':').append(bindPort).append("\n  default_backend routers\n");
    frontendLines.forEach(line -> out.append("  ").append(line.strip()).append('\n'));
    if (statsPort != 0) {
      out.append("listen stats\n  bind 127.0.0.1:").append(statsPort).append("\n  no log\n  stats enable\n  stats uri /stats\n");
    }
    out.append(BACKEND).append('\n');
    backend.stream().filter(line -> !line.strip().startsWith("server ")).forEach(line -> out.append(line).append('\n'));
    for (Server s : servers) {
      out.append("  server ").append(s.name()).append(' ').append(s.host()).append(':').append(s.port()).append(" check");
      if (s.checkPort() > 0) out.append(" port ").append(s.checkPort());
      out.append('\n');
    }
    return out.toString();
  }

  /** Section header → its indented lines (comments and blank lines left out). */
  public static Map<String, List<String>> sections(String cfg) {
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
