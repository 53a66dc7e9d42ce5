package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.ConfigOverrides;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One fleet file for every replica: the commands apply {@code NARWHAL_*} variables and {@code --set} over the file
 * (a bad one stops the command with the key, value, expectation and source), and a hot reload re-applies them.
 */
@Timeout(90)
class FleetOverridesTest {
  private final Vertx engines = Vertx.vertx();
  private NarwhalNode node;
  @TempDir
  Path dir;

  @AfterEach
  void stop() {
    if (node != null) ClusterHarness.await(node.close());
    ClusterHarness.await(engines.close());
  }

  private JsonArray realEngines() {
    JsonArray list = new JsonArray();
    for (String spec : List.of("P0:prefill", "D0:decode")) {
      String[] p = spec.split(":");
      SimEngine sim = ClusterHarness.await(SimEngine.start(engines,
          new SimEngineOptions().setName(p[0]).setRole(p[1]).setPort(0).setSideChannelPort(0)));
      list.add(new JsonObject().put("iid", p[0]).put("url", sim.url()).put("role", p[1]));
    }
    return list;
  }

  /** A fleet file whose own engine list points at nothing that listens. */
  private Path fleetFile(JsonObject extra) throws Exception {
    Path file = dir.resolve("fleet.json");
    JsonObject fleet = new JsonObject().put("model", ClusterHarness.MODEL)
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "X0").put("url", "http://127.0.0.1:9").put("role", "both")))
        .put("engine", new JsonObject().put("connect_timeout_s", 1).put("health_timeout_s", 1))
        .put("journal", new JsonObject().put("path", dir.resolve("journal.jsonl").toString()));
    extra.forEach(e -> fleet.put(e.getKey(), e.getValue()));
    Files.writeString(file, fleet.encodePrettily());
    return file;
  }

  private record Run(int exit, String out, String err) {
  }

  private static Run preflight(Map<String, String> env, String... args) {
    PreflightCommand command = new PreflightCommand();
    command.fleetFile.environment = env;
    StringWriter err = new StringWriter();
    CommandLine cli = NarwhalCommand.commandLine(command).setErr(new PrintWriter(err, true));
    java.io.PrintStream original = System.out;
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    System.setOut(new java.io.PrintStream(out, true));
    try {
      int exit = cli.execute(args);
      return new Run(exit, out.toString(), err.toString());
    } finally {
      System.setOut(original);
    }
  }

  @Test
  void preflightReadsTheEnvironmentAndSetOverTheFile() throws Exception {
    Path file = fleetFile(new JsonObject());
    String fleet = realEngines().encode();
    Run fileOnly = preflight(Map.of(), "--fleet", file.toString());
    assertEquals(1, fileOnly.exit(), "the file's own engine does not answer: " + fileOnly.out());

    Run fromEnv = preflight(Map.of("NARWHAL_ENGINES", fleet), "--fleet", file.toString());
    assertEquals(0, fromEnv.exit(), fromEnv.out() + fromEnv.err());
    assertTrue(fromEnv.out().contains("P0") && fromEnv.out().contains("D0") && !fromEnv.out().contains("X0"), fromEnv.out());
    assertEquals(1, fromEnv.out().lines().filter(l -> l.contains("P0") && l.contains("health")).count(),
        "each check is printed once, in the table: " + fromEnv.out());

    Run setWins = preflight(Map.of("NARWHAL_ENGINES", fleet), "--fleet", file.toString(),
        "--set", "engines=[{\"iid\": \"Y0\", \"url\": \"http://127.0.0.1:9\"}]");
    assertEquals(1, setWins.exit(), "--set beats the environment: " + setWins.out());
    assertTrue(setWins.out().contains("Y0"), setWins.out());
  }

  @Test
  void aBadOverrideStopsTheCommandNamingKeyValueExpectationAndSource() throws Exception {
    Path file = fleetFile(new JsonObject());
    Run badEnv = preflight(Map.of("NARWHAL_SERVING_MAX_REQUEST_BYTES", "lots"), "--fleet", file.toString());
    assertEquals(2, badEnv.exit());
    assertEquals("narwhal: fleet file " + file + " refused: serving.max_request_bytes: \"lots\" is not valid: expected "
        + "an integer of at least 1024 (from environment variable NARWHAL_SERVING_MAX_REQUEST_BYTES)", badEnv.err().strip());
    Run unknown = preflight(Map.of(), "--fleet", file.toString(), "--set", "serving.max_requst_bytes=1");
    assertEquals(2, unknown.exit());
    assertEquals("narwhal: serving.max_requst_bytes: unknown key (from --set serving.max_requst_bytes=1)", unknown.err().strip());
  }

  @Test
  void aHotReloadReappliesTheOverrides() throws Exception {
    Path file = fleetFile(new JsonObject().put("engines", realEngines())
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("engine", new JsonObject().put("first_token_timeout_s", 5)));
    ConfigOverrides overrides = ConfigOverrides.of(Map.of("NARWHAL_ENGINE_FIRST_TOKEN_TIMEOUT_S", "0.7"),
        List.of("serving.retry_budget=42"));
    node = ClusterHarness.await(NarwhalNode.start(overrides.parse(Files.readString(file)), NarwhalNode.PreflightMode.STRICT,
        line -> { }));
    LinkedBlockingQueue<JsonObject> applied = new LinkedBlockingQueue<>();
    MessageConsumer<JsonObject> changes = node.vertx().eventBus().consumer(Addresses.CONFIG_CHANGED, m -> applied.add(m.body()));
    ClusterHarness.await(changes.completion());
    ClusterHarness.await(node.watch(file, overrides));

    JsonObject changed = new JsonObject(Files.readString(file));
    changed.getJsonObject("engine").put("first_token_timeout_s", 3);
    changed.put("serving", new JsonObject().put("retry_budget", 7).put("max_attempts", 2));
    Files.writeString(file, changed.encodePrettily());
    JsonObject next = applied.poll(30, TimeUnit.SECONDS);
    assertNotNull(next, "the changed file was applied");
    assertEquals(2, next.getJsonObject("serving").getInteger("max_attempts"), "the file's change applies");
    assertEquals(0.7, next.getJsonObject("engine").getDouble("first_token_timeout_s"), "the environment still overrides");
    assertEquals(42, next.getJsonObject("serving").getInteger("retry_budget"), "--set still overrides");
  }

  @Test
  void theClusterFlagIsReappliedByEveryReloadLikeTheOverrides() throws Exception {
    Path fleet = dir.resolve("fleet.json");
    Files.writeString(fleet, new JsonObject().put("model", "m").put("engines", new JsonArray()
        .add(new JsonObject().put("iid", "P0").put("url", "http://127.0.0.1:9"))).encode());
    ServeOptions options = new ServeOptions();
    CommandLine.populateCommand(options, "--fleet", fleet.toString(), "--cluster");
    assertTrue(options.config().cluster().enabled(), "--cluster switches clustering on");
    assertTrue(options.fleetFile.overrides().parse(Files.readString(fleet)).cluster().enabled(),
        "what a hot reload reads keeps clustering on: no restart-pending change of cluster.enabled");
  }
}
