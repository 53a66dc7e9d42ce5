package narwhal.router;

import io.netty.util.concurrent.EventExecutor;
import io.vertx.core.internal.VertxInternal;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * {@code server.health_port}: {@code /ready} and {@code /health} are answered by a loop of their own, from state
 * already computed, while every event loop of the replica (router, placement, breaker) is held; draining and
 * placement's readiness reach that port as they reach the client port.
 */
@Timeout(60)
class HealthPortTest {
  private final HttpClient client = HttpClient.newHttpClient();

  @Test
  void readinessIsAnsweredWhileEveryEventLoopOfTheReplicaIsHeld() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("server", json.getJsonObject("server").put("health_port", 0)))) {
      int healthPort = h.router.healthPort();
      assertEquals(200, get(healthPort, "/ready").statusCode());

      CountDownLatch release = new CountDownLatch(1);
      CountDownLatch held = holdEveryLoop(h, release);
      try {
        held.await();
        CompletableFuture<HttpResponse<String>> viaClientPort = client.sendAsync(request(h.router.actualPort(), "/ready"),
            HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> ready = get(healthPort, "/ready");
        assertEquals(200, ready.statusCode(), ready.body());
        assertEquals(new JsonObject().put("ready", true), new JsonObject(ready.body()));
        HttpResponse<String> health = get(healthPort, "/health");
        assertEquals(200, health.statusCode());
        assertEquals("ok", new JsonObject(health.body()).getString("status"));
        assertFalse(viaClientPort.isDone(), "the client port's loops are held: only the health port answers");

        h.router.drain();
        HttpResponse<String> draining = get(healthPort, "/ready");
        assertEquals(503, draining.statusCode(), "draining reaches the health port at once, loops held or not");
        assertEquals(ReadinessAnswer.DRAINING, new JsonObject(draining.body()).getString("reason"));

        release.countDown();
        assertEquals(503, viaClientPort.get().statusCode(), "the client port answers the same once its loop runs");
      } finally {
        release.countDown();
      }
    }
  }

  @Test
  void aHealthPortAlreadyInUseFailsTheStartNamingTheKey() throws Exception {
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0)) {
      // the harness turns a failed start into an AssertionError carrying the cause; a hang would end at its timeout
      Throwable refused = org.junit.jupiter.api.Assertions.assertThrows(Throwable.class,
          () -> RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
              .put("server", json.getJsonObject("server").put("health_port", taken.getLocalPort()))).close());
      String message = String.valueOf(refused.getMessage());
      org.junit.jupiter.api.Assertions.assertTrue(message.contains("server.health_port " + taken.getLocalPort() + ": cannot listen"),
          message);
    }
  }

  @Test
  void placementsReadinessReachesTheHealthPort() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("server", json.getJsonObject("server").put("health_port", 0)))) {
      int healthPort = h.router.healthPort();
      h.vertx.eventBus().publish(Addresses.FLEET_CHANGED,
          new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, System.currentTimeMillis(), "test").toJson());
      h.placementSettled();
      HttpResponse<String> ready = get(healthPort, "/ready");
      assertEquals(503, ready.statusCode(), ready.body());
      assertEquals("no serving engine can take the decode phase", new JsonObject(ready.body()).getString("reason"));
      assertEquals(new JsonObject(h.get("/ready").body()), new JsonObject(ready.body()), "both ports give one answer");
      assertEquals(404, get(healthPort, "/v1/models").statusCode(), "the health port serves nothing else");
    }
  }

  /** Puts a task on every event loop of the replica's Vert.x that waits for {@code release}. */
  private static CountDownLatch holdEveryLoop(RouterHarness h, CountDownLatch release) {
    List<EventExecutor> loops = new java.util.ArrayList<>();
    ((VertxInternal) h.vertx).nettyEventLoopGroup().forEach(loops::add);
    CountDownLatch held = new CountDownLatch(loops.size());
    for (EventExecutor loop : loops) {
      loop.execute(() -> {
        held.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }
    return held;
  }

  private HttpResponse<String> get(int port, String path) throws Exception {
    return client.send(request(port, path), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest request(int port, String path) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).GET().build();
  }
}
