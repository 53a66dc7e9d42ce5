package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hot reload of the fleet file (docs/configuration.md): a valid change (a timeout, an added and later a removed engine) applies
 * without a restart and without failing the request in flight; an invalid file is refused whole, naming the key.
 */
@Timeout(90)
class HotReloadTest {
  private final Vertx engines = Vertx.vertx();
  private final Map<String, SimEngine> sims = new LinkedHashMap<>();
  private final HttpClient http = HttpClient.newHttpClient();
  private NarwhalNode node;
  private Path fleetFile;

  @AfterEach
  void stop() {
    if (node != null) ClusterHarness.await(node.close());
    ClusterHarness.await(engines.close());
  }

  private SimEngine sim(String iid, String role) {
    return sims.computeIfAbsent(iid, k -> ClusterHarness.await(SimEngine.start(engines,
        new SimEngineOptions().setName(iid).setRole(role).setPort(0).setSideChannelPort(0))));
  }

  private JsonObject fleet(double firstTokenS, String... iids) throws Exception {
    JsonArray list = new JsonArray();
    for (String iid : iids) {
      SimEngine s = sims.get(iid);
      list.add(new JsonObject().put("iid", iid).put("url", s.url()).put("role", s.options().getRole()));
    }
    return new JsonObject().put("model", ClusterHarness.MODEL).put("engines", list)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("engine", new JsonObject().put("first_token_timeout_s", firstTokenS).put("decode_read_timeout_s", 5))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 2).put("liveness_every", 100000))
        .put("journal", new JsonObject().put("path", fleetFile.resolveSibling("journal.jsonl").toString()));
  }

  private HttpResponse<String> call(String method, String path, JsonObject body) throws Exception {
    return callAsync(method, path, body).get(30, TimeUnit.SECONDS);
  }

  private CompletableFuture<HttpResponse<String>> callAsync(String method, String path, JsonObject body) {
    HttpRequest.Builder req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.port() + path))
        .header("content-type", "application/json");
    req.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()));
    return http.sendAsync(req.build(), HttpResponse.BodyHandlers.ofString());
  }

  private String state(String iid) throws Exception {
    JsonArray list = new JsonObject(call("GET", "/narwhal/state", null).body()).getJsonArray("engines");
    return list.stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid"))).map(e -> e.getString("state"))
        .findFirst().orElse("absent");
  }

  private void await(BooleanSupplier condition, String what) {
    for (int i = 0; i < 1000; i++) {
      if (condition.getAsBoolean()) return;
      ClusterHarness.await(io.vertx.core.Future.<Void>future(p -> engines.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError("never: " + what);
  }

  private BooleanSupplier stateIs(String iid, String expected) {
    return () -> {
      try {
        return expected.equals(state(iid));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    };
  }

  private static JsonObject completion(boolean stream) {
    return new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "reload the fleet while I talk").put("max_tokens", 8)
        .put("stream", stream);
  }

  @Test
  void validChangesApplyWithoutRestartAndInvalidOnesAreRefusedWhole() throws Exception {
    fleetFile = Files.createTempDirectory("narwhal-reload").resolve("fleet.json");
    sim("P0", "prefill");
    sim("D0", "decode");
    sim("D1", "decode");
    Files.writeString(fleetFile, fleet(5, "P0", "D0").encodePrettily());
    node = ClusterHarness.await(NarwhalNode.start(narwhal.common.config.NarwhalConfig.parse(Files.readString(fleetFile)),
        NarwhalNode.PreflightMode.STRICT, line -> { }));
    ClusterHarness.await(node.watch(fleetFile));
    LinkedBlockingQueue<JsonObject> refusals = new LinkedBlockingQueue<>();
    MessageConsumer<JsonObject> refused = node.vertx().eventBus().consumer(Addresses.CONFIG_REFUSED, m -> refusals.add(m.body()));
    ClusterHarness.await(refused.completion());

    sims.get("D0").faults().add(new JsonObject().put("kind", "slow_tokens").put("itl_ms", 150).put("phase", "decode"));
    CompletableFuture<HttpResponse<String>> inFlight = callAsync("POST", "/v1/completions", completion(true));
    await(() -> sims.get("D0").requests().stream().anyMatch(r -> "decode".equals(r.getString("phase"))), "the slow stream started");

    Files.writeString(fleetFile, fleet(0.4, "P0", "D0", "D1").encodePrettily());
    await(stateIs("D1", "serving"), "D1 added, checked and placed");
    HttpResponse<String> survived = inFlight.get(30, TimeUnit.SECONDS);
    assertEquals(200, survived.statusCode());
    assertTrue(survived.body().trim().endsWith("data: [DONE]"), "the request in flight finished: " + survived.body());

    sims.get("D1").faults().add(new JsonObject().put("kind", "hang_after_headers").put("phase", "decode"));
    sims.get("D0").faults().clear();
    sims.get("D0").faults().add(new JsonObject().put("kind", "hang_after_headers").put("phase", "decode"));
    HttpResponse<String> timedOut = call("POST", "/v1/completions", completion(false));
    assertEquals(504, timedOut.statusCode());
    assertTrue(timedOut.body().contains("no first token within 0.4s"), "the reloaded timeout applies: " + timedOut.body());

    Files.writeString(fleetFile, fleet(0.4, "P0", "D0", "D1").put("serving", new JsonObject().put("max_attempts", 9)).encodePrettily());
    JsonObject refusal = refusals.poll(30, TimeUnit.SECONDS);
    assertNotNull(refusal, "the invalid file was refused");
    assertEquals("serving.max_attempts", refusal.getString("key"));
    assertTrue(refusal.getString("message").startsWith("serving.max_attempts: 9 is not valid"), refusal.encode());
    assertEquals("serving", state("D1"), "the last good configuration stays");
    String metrics = call("GET", "/metrics", null).body();
    assertTrue(metrics.contains("narwhal_config_reloads_total{outcome=\"refused\"} 1.0"), metrics);
    assertTrue(metrics.contains("narwhal_config_reloads_total{outcome=\"applied\"} 1.0"));

    sims.values().forEach(s -> s.faults().clear());
    Files.writeString(fleetFile, fleet(0.4, "P0", "D1").encodePrettily());
    assertTrue(call("GET", "/metrics", null).body().contains("iid=\"D0\""), "a listed engine has its series");
    await(stateIs("D0", "absent"), "D0 removed");
    await(() -> {
      try {
        return !call("GET", "/metrics", null).body().contains("iid=\"D0\"");
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }, "the removed engine's series are dropped");
    assertEquals(200, call("POST", "/v1/completions", completion(false)).statusCode());
  }
}
