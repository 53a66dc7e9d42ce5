package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Secrets from files (docs/configuration.md#secrets): the client keys, the engines' key and the admin token live in a
 * directory rotated as kubelet rotates a mounted Secret (a new timestamped directory, then the {@code ..data} link
 * swapped in one rename). The running replica takes the new values without a restart; a reload naming a file that
 * does not exist is refused, not applied (a fresh start with it would stop).
 */
@Timeout(90)
class SecretRotationTest {
  private final Vertx engines = Vertx.vertx();
  private final List<SimEngine> sims = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();
  private NarwhalNode node;
  private Path secrets;
  private int generation;

  @AfterEach
  void stop() {
    if (node != null) ClusterHarness.await(node.close());
    ClusterHarness.await(engines.close());
  }

  /** Writes {@code files} as kubelet writes a Secret volume's new version: a fresh directory, then {@code ..data} swapped. */
  private void secretVolume(Map<String, String> files) throws Exception {
    Path version = secrets.resolve("..2026_12_05_v" + (++generation));
    Files.createDirectory(version);
    for (Map.Entry<String, String> file : files.entrySet()) {
      Files.writeString(version.resolve(file.getKey()), file.getValue() + "\n");
      Path link = secrets.resolve(file.getKey());
      if (!Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS)) Files.createSymbolicLink(link, Path.of("..data", file.getKey()));
    }
    Path next = secrets.resolve("..data_tmp");
    Files.createSymbolicLink(next, version.getFileName());
    Files.move(next, secrets.resolve("..data"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  private JsonObject fleet(String clientKeyFile) {
    JsonArray list = new JsonArray();
    for (SimEngine s : sims) list.add(new JsonObject().put("iid", s.options().getName()).put("url", s.url()).put("role", s.options().getRole()));
    return new JsonObject().put("model", ClusterHarness.MODEL).put("engines", list)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0).put("health_port", 0)
            .put("api_key_file", clientKeyFile))
        .put("engine", new JsonObject().put("engine_api_key_file", secrets.resolve("engine-key").toString()))
        .put("admin", new JsonObject().put("token_file", secrets.resolve("admin-token").toString()))
        .put("journal", new JsonObject().put("path", secrets.resolveSibling("journal.jsonl").toString()));
  }

  private HttpResponse<String> send(int port, String path, String body, String key) throws Exception {
    HttpRequest.Builder req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) req.header("authorization", "Bearer " + key);
    return http.send(req.build(), HttpResponse.BodyHandlers.ofString());
  }

  private int completion(String key) {
    try {
      return send(node.port(), "/v1/completions", new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "rotate")
          .put("max_tokens", 4).encode(), key).statusCode();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private int adminState(String token) {
    try {
      return send(node.healthPort(), "/narwhal/admin", new JsonObject().put("command", "state").put("args", new JsonObject())
          .encode(), token).statusCode();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private void await(BooleanSupplier condition, String what) {
    for (int i = 0; i < 1500; i++) {
      if (condition.getAsBoolean()) return;
      ClusterHarness.await(io.vertx.core.Future.<Void>future(p -> engines.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError("never: " + what);
  }

  @Test
  void aRotatedSecretVolumeAppliesWithoutRestartAndAReloadNamingAMissingFileIsRefused() throws Exception {
    Path dir = Files.createTempDirectory("narwhal-secrets");
    secrets = Files.createDirectory(dir.resolve("secrets"));
    secretVolume(Map.of("client-keys", "c1", "engine-key", "e1", "admin-token", "a1"));
    for (String[] engine : List.of(new String[] {"P0", "prefill"}, new String[] {"D0", "decode"})) {
      sims.add(ClusterHarness.await(SimEngine.start(engines, new SimEngineOptions().setName(engine[0]).setRole(engine[1])
          .setPort(0).setSideChannelPort(0).setApiKey("e1"))));
    }
    Path fleetFile = dir.resolve("fleet.json");
    Files.writeString(fleetFile, fleet(secrets.resolve("client-keys").toString()).encodePrettily());
    node = ClusterHarness.await(NarwhalNode.start(NarwhalConfig.parse(Files.readString(fleetFile)),
        NarwhalNode.PreflightMode.STRICT, line -> { }, name -> null));
    ClusterHarness.await(node.watch(fleetFile));
    LinkedBlockingQueue<JsonObject> refusals = new LinkedBlockingQueue<>();
    MessageConsumer<JsonObject> refused = node.vertx().eventBus().consumer(Addresses.CONFIG_REFUSED, m -> refusals.add(m.body()));
    ClusterHarness.await(refused.completion());

    assertEquals(200, completion("c1"), "the key from the file, and the engines' key from its file");
    assertEquals(401, completion(null));
    assertEquals(200, adminState("a1"));
    assertEquals(401, adminState("a2"));

    sims.forEach(s -> s.rotateApiKey("e2"));
    secretVolume(Map.of("client-keys", "c2,c3", "engine-key", "e2", "admin-token", "a2"));
    await(() -> completion("c2") == 200, "the rotated client key and engines' key in use");
    assertEquals(401, completion("c1"), "the old client key no longer opens the router");
    assertEquals(200, completion("c3"));
    await(() -> adminState("a2") == 200, "the rotated admin token in use");
    assertEquals(401, adminState("a1"));

    Files.writeString(fleetFile, fleet(dir.resolve("no-such-file").toString()).encodePrettily());
    JsonObject refusal = refusals.poll(30, TimeUnit.SECONDS);
    assertNotNull(refusal, "a reload a fresh start would refuse is refused");
    assertEquals("server.api_key_file", refusal.getString("key"), refusal.encode());
    assertTrue(refusal.getString("message").contains("no-such-file"), refusal.encode());
    assertEquals(200, completion("c2"), "the keys before the refused reload stay");
    assertEquals(401, completion(null));
  }
}
