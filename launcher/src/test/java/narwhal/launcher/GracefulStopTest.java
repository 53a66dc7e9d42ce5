package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NarwhalNode#shutdown}, what SIGTERM runs: readiness turns false and new requests are refused, a request in
 * flight finishes and its journal row is written, within {@code serving.graceful_timeout_s}; past it, the stop goes on.
 */
@Timeout(60)
class GracefulStopTest {
  private final Vertx client = Vertx.vertx();
  private final HttpClientAgent http = client.createHttpClient();
  private final io.vertx.core.Context context = client.getOrCreateContext();
  private final List<SimEngine> sims = new ArrayList<>();
  private Path journal;

  private record Reply(int status, String body) {
  }

  private NarwhalConfig fleet(double gracefulS, double itlMs) throws Exception {
    for (String spec : List.of("P0:prefill", "D0:decode")) {
      String[] p = spec.split(":");
      sims.add(ClusterHarness.await(SimEngine.start(client, new SimEngineOptions().setName(p[0]).setRole(p[1]).setPort(0)
          .setSideChannelPort(0).setItlMs(itlMs))));
    }
    JsonArray engines = new JsonArray();
    sims.forEach(s -> engines.add(new JsonObject().put("iid", s.name()).put("url", s.url()).put("role", s.options().getRole())));
    journal = Files.createTempFile("narwhal-stop-journal", ".jsonl");
    return NarwhalConfig.fromJson(new JsonObject().put("model", ClusterHarness.MODEL).put("engines", engines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("serving", new JsonObject().put("graceful_timeout_s", gracefulS))
        .put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", 5))
        .put("journal", new JsonObject().put("path", journal.toString())));
  }

  private Future<Reply> send(NarwhalNode node, HttpMethod method, String path, JsonObject body) {
    RequestOptions options = new RequestOptions().setMethod(method).setHost("127.0.0.1").setPort(node.port()).setURI(path)
        .putHeader("content-type", "application/json");
    return Future.future(p -> context.runOnContext(v -> http.request(options)
        .compose(req -> body == null ? req.send() : req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> new Reply(resp.statusCode(), b.toString())))
        .onComplete(p)));
  }

  private static JsonObject completion(int tokens) {
    return new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", tokens);
  }

  private static Future<Integer> reservations(NarwhalNode node) {
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(),
        new DeliveryOptions().setLocalOnly(true)).map(m -> m.body().getInteger("reservations"));
  }

  private static void awaitInFlight(NarwhalNode node) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (ClusterHarness.await(reservations(node)) == 0) {
      assertTrue(System.nanoTime() < deadline, "the request reached placement");
      ClusterHarness.await(Future.<Void>future(p -> node.vertx().setTimer(10, t -> p.complete())));
    }
  }

  @Test
  void inFlightRequestsFinishNewOnesAreRefusedAndTheJournalIsFlushed() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(20, 50), NarwhalNode.PreflightMode.STRICT, line -> { }));
    assertEquals(200, ClusterHarness.await(send(node, HttpMethod.GET, "/ready", null)).status());
    Future<Reply> inFlight = send(node, HttpMethod.POST, "/v1/completions", completion(30));
    awaitInFlight(node);

    List<String> said = new CopyOnWriteArrayList<>();
    Future<Void> stopped = node.shutdown(said::add);
    Reply ready = ClusterHarness.await(send(node, HttpMethod.GET, "/ready", null));
    assertEquals(503, ready.status(), "readiness turns false at once, so a load balancer stops sending");
    assertTrue(ready.body().contains("stopping"), ready.body());
    Reply refused = ClusterHarness.await(send(node, HttpMethod.POST, "/v1/completions", completion(2)));
    assertEquals(503, refused.status(), "a new request is refused while the replica stops: " + refused.body());

    Reply finished = ClusterHarness.await(inFlight);
    assertEquals(200, finished.status(), finished.body());
    ClusterHarness.await(stopped);
    assertTrue(said.get(0).contains("waiting up to 20.0 s for 1 in-flight request(s)"), String.valueOf(said));
    assertTrue(said.get(said.size() - 1).startsWith("narwhal: stopped"), String.valueOf(said));
    List<JsonObject> rows = Files.readAllLines(journal).stream().filter(l -> !l.isBlank()).map(JsonObject::new)
        .filter(r -> r.containsKey("rid")).toList();
    assertTrue(rows.stream().anyMatch(r -> "completed".equals(r.getString("terminal"))),
        "the finished request's row was flushed before the stop completed: " + rows);
  }

  @Test
  void pastTheGracefulTimeoutTheStopGoesOn() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(0.3, 200), NarwhalNode.PreflightMode.SKIP, line -> { }));
    Future<Reply> slow = send(node, HttpMethod.POST, "/v1/completions", completion(50));
    awaitInFlight(node);
    long start = System.nanoTime();
    List<String> said = new CopyOnWriteArrayList<>();
    ClusterHarness.await(node.shutdown(said::add));
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    assertTrue(tookMs < 5_000, "stopped after the graceful timeout, not after the 10 s request: " + tookMs + " ms");
    assertTrue(said.stream().anyMatch(l -> l.contains("graceful timeout: 1 request(s) still in flight are cut")), String.valueOf(said));
    assertNotEquals(200, slow.transform(ar -> Future.succeededFuture(ar.succeeded() ? ar.result().status() : -1))
        .toCompletionStage().toCompletableFuture().get().intValue(), "the request past the timeout was cut");
  }

  @AfterEach
  void close() {
    ClusterHarness.await(http.close().eventually(client::close));
  }
}
