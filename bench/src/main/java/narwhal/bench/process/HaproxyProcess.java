package narwhal.bench.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * haproxy from the OS packages in front of router replicas, with the settings of {@code deploy/haproxy.cfg}
 * ({@link #config}, {@link HaproxyConfig}): health check {@code GET /ready}, retries only where nothing was processed, health
 * check changes logged, and (for the benchmarks only) every request that failed, was retried or redispatched logged
 * too ({@link #requestLog}). Its log goes to a file; {@link #servers} reads each server's state from the stats page.
 * Stopped with SIGTERM. The system property {@value #CFG_PROPERTY} names another haproxy.cfg to take the settings from
 * (to measure an older or a candidate configuration with the same build).
 */
public final class HaproxyProcess implements AutoCloseable {
  /** The system property naming a haproxy.cfg to use instead of the build's {@code deploy/haproxy.cfg}. */
  public static final String CFG_PROPERTY = "narwhal.bench.haproxy_cfg";
  /** Frontend settings the benchmarks add: an HTTP log line for each request that failed, was retried or redispatched. */
  static final List<String> REQUEST_LOG = List.of("option httplog", "option dontlog-normal");
  private static final Pattern REQUEST_LINE = Pattern.compile(" routers/(\\S+) \\S+ (\\d{3}) .*? ([A-Za-z-]{4}) \\d+/\\d+/\\d+/\\d+/(\\+?\\d+) ");

  /** A replica behind the balancer; {@code checkPort}: where its health check goes ({@code server.health_port}), 0 for {@code port}. */
  public record Server(String name, int port, int checkPort) {
    public Server(String name, int port) {
      this(name, port, 0);
    }
  }

  /** One logged request: the server it went to last, the status haproxy gave, its termination state, its retries ("+1": redispatched). */
  public record LoggedRequest(String server, int status, String termination, String retries, String line) {
  }

  /** One server as the stats page shows it: {@code UP}, {@code DOWN}, {@code UP 1/2}, … and its current sessions. */
  public record ServerState(String status, int sessions, String check) {
    public boolean up() {
      return status.startsWith("UP");
    }
  }

  private final Process process;
  private final int port;
  private final int statsPort;
  private final Path log;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private HaproxyProcess(Process process, int port, int statsPort, Path log) {
    this.process = process;
    this.port = port;
    this.statsPort = statsPort;
    this.log = log;
  }

  /** The haproxy binary on this machine, if there is one. */
  public static Optional<Path> binary() {
    return OsBinary.find("haproxy");
  }

  /**
   * The configuration ({@link HaproxyConfig}): {@code deploy/haproxy.cfg}'s settings, listening on {@code port}, stats
   * (CSV) on {@code statsPort}, logging to standard error, one {@code server} line per replica.
   */
  public static String config(int port, int statsPort, List<Server> servers) {
    return HaproxyConfig.render(settings(), "127.0.0.1", port, statsPort,
        servers.stream().map(s -> new HaproxyConfig.Server(s.name(), "127.0.0.1", s.port(), s.checkPort())).toList(), REQUEST_LOG);
  }

  /** The haproxy.cfg whose settings run: the file {@value #CFG_PROPERTY} names, else the build's {@code deploy/haproxy.cfg}. */
  public static String settings() {
    String file = System.getProperty(CFG_PROPERTY);
    if (file == null || file.isBlank()) return HaproxyConfig.deployed();
    try {
      return Files.readString(Path.of(file));
    } catch (IOException e) {
      throw new UncheckedIOException("-D" + CFG_PROPERTY + "=" + file + ": " + e.getMessage(), e);
    }
  }

  /** Where the settings come from, for a report's layout. */
  public static String settingsSource() {
    String file = System.getProperty(CFG_PROPERTY);
    return file == null || file.isBlank() ? "deploy/haproxy.cfg" : file + " (-D" + CFG_PROPERTY + ")";
  }

  public static HaproxyProcess start(Path binary, Path dir, List<Server> servers) {
    try {
      Files.createDirectories(dir);
      int port = FreePort.pick();
      int statsPort = FreePort.pick();
      Path conf = dir.resolve("haproxy.cfg");
      Path log = dir.resolve("haproxy.log");
      Files.writeString(conf, config(port, statsPort, servers));
      Process process = new ProcessBuilder(binary.toString(), "-db", "-f", conf.toAbsolutePath().toString())
          .redirectErrorStream(true).redirectOutput(log.toFile()).start();
      OsBinary.awaitListening("haproxy", process, port, () -> Files.readString(log).strip());
      return new HaproxyProcess(process, port, statsPort, log);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public long pid() {
    return process.pid();
  }

  public int port() {
    return port;
  }

  public Path log() {
    return log;
  }

  /** Each backend server's state from the stats page (CSV), by name; empty when haproxy does not answer. */
  public Map<String, ServerState> servers() {
    Map<String, ServerState> out = new LinkedHashMap<>();
    try {
      HttpResponse<String> reply = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + statsPort + "/stats;csv"))
          .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
      String[] lines = reply.body().split("\n");
      List<String> header = Arrays.asList(lines[0].replaceFirst("^# ", "").split(",", -1));
      int px = header.indexOf("pxname");
      int sv = header.indexOf("svname");
      int status = header.indexOf("status");
      int scur = header.indexOf("scur");
      int check = header.indexOf("check_status");
      for (int i = 1; i < lines.length; i++) {
        String[] f = lines[i].split(",", -1);
        if (f.length <= status || !"routers".equals(f[px]) || "BACKEND".equals(f[sv]) || "FRONTEND".equals(f[sv])) continue;
        out.put(f[sv], new ServerState(f[status], f[scur].isEmpty() ? 0 : Integer.parseInt(f[scur]), check >= 0 ? f[check] : ""));
      }
    } catch (IOException | RuntimeException e) {
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return out;
  }

  /** haproxy's log lines about health checks and server state changes. */
  public List<String> healthLog() {
    try {
      List<String> out = new ArrayList<>();
      for (String line : Files.readAllLines(log)) {
        // haproxy writes each event twice to standard error: as a log line and as a [WARNING] alert
        if (line.startsWith("[")) continue;
        if (REQUEST_LINE.matcher(line).find()) continue;
        if (line.contains("Health check") || line.contains(" is DOWN") || line.contains(" is UP") || line.contains("no server available")) {
          out.add(line.strip());
        }
      }
      return out;
    } catch (IOException e) {
      return List.of("(no haproxy log: " + e.getMessage() + ")");
    }
  }

  /** The requests haproxy logged (failed, retried or redispatched ones: {@link #REQUEST_LOG}). */
  public List<LoggedRequest> requestLog() {
    List<LoggedRequest> out = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(log)) {
        if (line.startsWith("[")) continue;
        Matcher m = REQUEST_LINE.matcher(line);
        if (m.find()) out.add(new LoggedRequest(m.group(1), Integer.parseInt(m.group(2)), m.group(3), m.group(4), line.strip()));
      }
    } catch (IOException e) {
      return out;
    }
    return out;
  }

  @Override
  public void close() {
    OsBinary.stop(process);
  }
}
