package narwhal.tools;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.process.HaproxyConfig;
import narwhal.bench.process.HaproxyProcess;
import narwhal.bench.process.RunnableJars;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.launcher.Blocking;
import narwhal.launcher.CommandFailure;
import narwhal.sim.SimEngine;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * {@code narwhal demo --replicas N}: what {@code deploy/} describes, on one machine. The simulated engines of the fleet
 * file run in this process; N router replicas, each its own {@code narwhal serve} process with its own fleet file
 * (port {@code server.port + k}, a cluster of their own on loopback), sit behind haproxy on {@code server.port}
 * configured from {@code deploy/haproxy.cfg} ({@link HaproxyConfig}). A replica that exits (SIGTERM it to try a rolling restart) is started
 * again, as systemd's {@code Restart=} would. Stopping the demo stops the replicas gracefully, then haproxy.
 */
final class ReplicaDemo {
  static final int MAX_REPLICAS = 9;
  private final NarwhalConfig config;
  private final int replicas;
  private final List<ChildProcess> children = new ArrayList<>();
  private Vertx vertx;
  private final List<SimEngine> sims = new ArrayList<>();
  private volatile boolean stopping;
  private ChildProcess haproxy;

  ReplicaDemo(NarwhalConfig config, int replicas) {
    if (replicas < 1 || replicas > MAX_REPLICAS) {
      throw new CommandFailure("--replicas: " + replicas + " is not valid: expected 1 to " + MAX_REPLICAS);
    }
    this.config = config;
    this.replicas = replicas;
  }

  /** The replica processes' fleet files: the demo's, each on its own port, clustered on loopback, engines not embedded. */
  static List<JsonObject> replicaFleets(NarwhalConfig config, int replicas, Path dir, String clusterName) {
    List<JsonObject> out = new ArrayList<>();
    for (int k = 1; k <= replicas; k++) {
      JsonObject fleet = config.toJson();
      fleet.getJsonObject("server").put("host", "127.0.0.1").put("port", config.server().port() + k);
      fleet.put("cluster", config.cluster().toJson().put("enabled", true).put("name", clusterName)
          .put("members", new JsonArray().add("127.0.0.1")).put("host", "127.0.0.1"));
      fleet.getJsonObject("sim").put("embedded", false);
      fleet.getJsonObject("journal").put("path", dir.resolve("replica" + k + "-journal.jsonl").toAbsolutePath().toString());
      NarwhalConfig.fromJson(fleet);
      out.add(fleet);
    }
    return out;
  }

  int run() {
    Path binary = HaproxyProcess.binary().orElseThrow(() -> new CommandFailure(
        "--replicas needs haproxy (Debian/Ubuntu: apt-get install haproxy)"));
    try {
      Path dir = Files.createTempDirectory("narwhal-demo");
      Runtime.getRuntime().addShutdownHook(new Thread(this::stop, "narwhal-demo-stop"));
      if (config.sim().embedded()) startSims();
      List<JsonObject> fleets = replicaFleets(config, replicas, dir, "narwhal-demo-" + UUID.randomUUID().toString().substring(0, 8));
      List<HaproxyConfig.Server> servers = new ArrayList<>();
      for (int k = 1; k <= replicas; k++) {
        Path file = dir.resolve("replica" + k + ".json");
        Files.writeString(file, fleets.get(k - 1).encodePrettily());
        servers.add(new HaproxyConfig.Server("replica" + k, "127.0.0.1", config.server().port() + k));
        System.out.println("narwhal demo: starting replica" + k + " on port " + (config.server().port() + k) + " ...");
        ChildProcess child = ChildProcess.start("replica" + k, serveCommand(file), dir.resolve("replica" + k + ".log"),
            ChildProcess.SERVING);
        children.add(child);
        supervise(k - 1);
      }
      Path cfg = dir.resolve("haproxy.cfg");
      Files.writeString(cfg, HaproxyConfig.forDemo(HaproxyConfig.deployed(), config.server().host(), config.server().port(), servers));
      haproxy = ChildProcess.start("haproxy", List.of(binary.toString(), "-db", "-f", cfg.toString()), dir.resolve("haproxy.log"), null);
      ChildProcess.awaitListening(haproxy, config.server().port());
      printTry(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try {
      Thread.currentThread().join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 0;
  }

  private void startSims() {
    vertx = Vertx.vertx();
    for (EngineConfig engine : config.engines()) {
      sims.add(Blocking.await(SimEngine.start(vertx, EmbeddedSim.options(config, engine))));
    }
  }

  /** Starts replica {@code i} again whenever it exits, unless the demo is stopping. */
  private void supervise(int i) {
    ChildProcess child = children.get(i);
    child.onExit(code -> {
      if (stopping) return;
      System.out.println("narwhal demo: " + child.name() + " (pid " + child.pid() + ") exited with " + code + "; starting it again");
      try {
        children.set(i, child.restart());
        System.out.println("narwhal demo: " + child.name() + " serves again (pid " + children.get(i).pid() + ")");
        supervise(i);
      } catch (RuntimeException e) {
        System.out.println("narwhal demo: " + child.name() + " did not start again: " + e.getMessage());
      }
    });
  }

  private void printTry(Path dir) {
    int port = config.server().port();
    System.out.println();
    System.out.println("narwhal demo: " + replicas + " clustered replicas behind haproxy; the balancer listens on port " + port);
    for (ChildProcess c : children) System.out.println("  " + c.name() + "  pid " + c.pid());
    System.out.println("Try:");
    System.out.println("  curl -s localhost:" + port + "/v1/completions -H 'content-type: application/json' \\");
    System.out.println("    -d '{\"model\": \"" + config.model() + "\", \"prompt\": \"The narwhal is\", \"max_tokens\": 8}'");
    System.out.println("  kill -TERM " + children.get(0).pid() + "    # replica1 drains and exits, the demo starts it again; "
        + "haproxy moves traffic to the others");
    System.out.println("Logs, fleet files, journals and the haproxy config: " + dir);
    System.out.println("Ctrl-C stops it.");
  }

  private List<String> serveCommand(Path fleet) {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    Path logging = Path.of("conf", "logging.properties");
    if (Files.exists(logging)) command.add("-Djava.util.logging.config.file=" + logging.toAbsolutePath());
    command.addAll(List.of("-jar", jar().toString(), "serve", "--fleet", fleet.toString()));
    return command;
  }

  /** Replicas first (gracefully, all at once), then haproxy, then the engines. */
  private void stop() {
    stopping = true;
    System.out.println("narwhal demo: stopping " + children.size() + " replica(s) gracefully ...");
    children.forEach(ChildProcess::terminate);
    children.forEach(c -> c.awaitExit((long) Math.ceil(config.serving().drainDelayS() + config.serving().gracefulTimeoutS()) + 20));
    if (haproxy != null) {
      haproxy.terminate();
      haproxy.awaitExit(10);
    }
    if (vertx == null) return;
    Future<Void> chain = Future.succeededFuture();
    for (SimEngine sim : sims) chain = chain.compose(v -> sim.close());
    Blocking.await(chain.eventually(vertx::close));
  }

  /** The production jar: the replicas run exactly what an operator deploys. */
  private static Path jar() {
    try {
      return RunnableJars.production();
    } catch (IllegalStateException e) {
      throw new CommandFailure("--replicas: " + e.getMessage());
    }
  }
}
