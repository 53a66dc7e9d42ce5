package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NarwhalNode#shutdown}, what SIGTERM runs: readiness turns false at once while new requests are still served
 * ({@code serving.drain_delay_s}), then new requests are refused as {@code shutting_down} and a request in flight
 * finishes and its journal row is written, within {@code serving.graceful_timeout_s}; past it, the stop goes on. The
 * waits are ended by the test ({@link ManualClock}), never by the wall clock.
 */
@Timeout(60)
class GracefulStopTest {
  private final Vertx client = Vertx.vertx();
  private final HttpClientAgent http = client.createHttpClient();
  private final io.vertx.core.Context context = client.getOrCreateContext();
  private final List<SimEngine> sims = new ArrayList<>();
  private Path journal;

  private record Reply(int status, String body, MultiMap headers) {
    JsonObject json() {
      return new JsonObject(body);
    }
  }

  /** The stop's waits, each ended when the test says so. */
  private static final class ManualClock implements NarwhalNode.StopClock {
    private final Map<String, Promise<Void>> waits = new ConcurrentHashMap<>();

    @Override
    public Future<Void> after(String key, long ms) {
      return waits.computeIfAbsent(key, k -> Promise.promise()).future();
    }

    boolean asked(String key) {
      return waits.containsKey(key);
    }

    void end(String key) {
      waits.computeIfAbsent(key, k -> Promise.promise()).tryComplete();
    }
  }

  private NarwhalConfig fleet(double gracefulS, double drainS, double itlMs) throws Exception {
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
        .put("serving", new JsonObject().put("graceful_timeout_s", gracefulS).put("drain_delay_s", drainS))
        .put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", 5))
        .put("journal", new JsonObject().put("path", journal.toString())));
  }

  private Future<Reply> send(NarwhalNode node, HttpMethod method, String path, JsonObject body) {
    RequestOptions options = new RequestOptions().setMethod(method).setHost("127.0.0.1").setPort(node.port()).setURI(path)
        .putHeader("content-type", "application/json");
    return Future.future(p -> context.runOnContext(v -> http.request(options)
        .compose(req -> body == null ? req.send() : req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> new Reply(resp.statusCode(), b.toString(), resp.headers())))
        .onComplete(p)));
  }

  private static JsonObject completion(int tokens) {
    return new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", tokens);
  }

  /** Waits until the router counts a request in flight (it counts from admission, before any reservation). */
  private void awaitInFlight(NarwhalNode node) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (ClusterHarness.await(send(node, HttpMethod.GET, "/narwhal/state", null)).json().getInteger("in_flight") == 0) {
      assertTrue(System.nanoTime() < deadline, "the request reached the router");
      ClusterHarness.await(Future.<Void>future(p -> node.vertx().setTimer(10, t -> p.complete())));
    }
  }

  private List<JsonObject> journalRows() throws Exception {
    return Files.readAllLines(journal).stream().filter(l -> !l.isBlank()).map(JsonObject::new)
        .filter(r -> r.containsKey("rid")).toList();
  }

  @Test
  void drainingReplicaIsUnreadyButServesThenRefusesAsShuttingDown() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(20, 30, 50), NarwhalNode.PreflightMode.STRICT, line -> { }));
    assertEquals(200, ClusterHarness.await(send(node, HttpMethod.GET, "/ready", null)).status());
    Future<Reply> inFlight = send(node, HttpMethod.POST, "/v1/completions", completion(30));
    awaitInFlight(node);

    ManualClock clock = new ManualClock();
    List<String> said = new CopyOnWriteArrayList<>();
    Future<Void> stopped = node.shutdown(said::add, clock);
    Reply ready = ClusterHarness.await(send(node, HttpMethod.GET, "/ready", null));
    assertEquals(503, ready.status(), "readiness turns false at once, so a load balancer stops sending");
    assertEquals("draining: this router replica is stopping", ready.json().getString("reason"), ready.body());
    Reply served = ClusterHarness.await(send(node, HttpMethod.POST, "/v1/completions", completion(2)));
    assertEquals(200, served.status(), "a new request is still served while the replica drains: " + served.body());
    assertTrue(clock.asked("serving.drain_delay_s"), "the drain delay runs");
    assertFalse(clock.asked("serving.graceful_timeout_s"), "nothing is refused before the drain delay is over");

    clock.end("serving.drain_delay_s");
    Reply refused = ClusterHarness.await(send(node, HttpMethod.POST, "/v1/completions", completion(2)));
    assertEquals(503, refused.status(), refused.body());
    JsonObject error = refused.json().getJsonObject("error");
    assertEquals("shutting_down", error.getString("type"), refused.body());
    assertEquals("this router replica is shutting down; retry on another replica", error.getString("message"));
    assertEquals("1", refused.headers().get("retry-after"));
    assertEquals("close", refused.headers().get("connection"));
    assertEquals(503, ClusterHarness.await(send(node, HttpMethod.GET, "/ready", null)).status());

    Reply finished = ClusterHarness.await(inFlight);
    assertEquals(200, finished.status(), finished.body());
    ClusterHarness.await(stopped);
    assertTrue(said.stream().anyMatch(l -> l.contains("new requests are still served for 30.0 s")), String.valueOf(said));
    assertTrue(said.stream().anyMatch(l -> l.contains("refused (503 shutting_down); waiting up to 20.0 s for ")),
        String.valueOf(said));
    assertTrue(said.get(said.size() - 1).startsWith("narwhal: stopped"), String.valueOf(said));
    List<JsonObject> rows = journalRows();
    assertEquals(2, rows.stream().filter(r -> "completed".equals(r.getString("terminal"))).count(),
        "the in-flight request and the one served while draining, flushed before the stop completed: " + rows);
    JsonObject rejected = rows.stream().filter(r -> "rejected".equals(r.getString("terminal"))).findFirst().orElseThrow();
    assertEquals("shutting_down", rejected.getString("reason"), rejected.encode());
    assertEquals("shutting_down", rejected.getString("error_type"), rejected.encode());
    assertEquals(503, rejected.getInteger("status"));
  }

  @Test
  void inFlightRequestsFinishNewOnesAreRefusedAndTheJournalIsFlushed() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(20, 0, 50), NarwhalNode.PreflightMode.STRICT, line -> { }));
    Future<Reply> inFlight = send(node, HttpMethod.POST, "/v1/completions", completion(30));
    awaitInFlight(node);

    ManualClock clock = new ManualClock();
    List<String> said = new CopyOnWriteArrayList<>();
    Future<Void> stopped = node.shutdown(said::add, clock);
    assertFalse(clock.asked("serving.drain_delay_s"), "drain_delay_s 0 refuses at once");
    Reply ready = ClusterHarness.await(send(node, HttpMethod.GET, "/ready", null));
    assertEquals(503, ready.status());
    Reply refused = ClusterHarness.await(send(node, HttpMethod.POST, "/v1/completions", completion(2)));
    assertEquals(503, refused.status(), refused.body());
    assertEquals("shutting_down", refused.json().getJsonObject("error").getString("type"), refused.body());

    Reply finished = ClusterHarness.await(inFlight);
    assertEquals(200, finished.status(), finished.body());
    ClusterHarness.await(stopped);
    assertTrue(said.get(0).contains("waiting up to 20.0 s for 1 in-flight request(s)"), String.valueOf(said));
    assertTrue(said.get(said.size() - 1).startsWith("narwhal: stopped"), String.valueOf(said));
    assertTrue(journalRows().stream().anyMatch(r -> "completed".equals(r.getString("terminal"))),
        "the finished request's row was flushed before the stop completed: " + journalRows());
  }

  @Test
  void pastTheGracefulTimeoutTheStopGoesOn() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(20, 0, 200), NarwhalNode.PreflightMode.SKIP, line -> { }));
    Future<Reply> slow = send(node, HttpMethod.POST, "/v1/completions", completion(50));
    awaitInFlight(node);
    ManualClock clock = new ManualClock();
    List<String> said = new CopyOnWriteArrayList<>();
    Future<Void> stopped = node.shutdown(said::add, clock);
    assertTrue(clock.asked("serving.graceful_timeout_s"), "the stop waits for the request in flight: " + said);
    assertFalse(stopped.isComplete(), "the stop waits while the 10 s request runs");
    clock.end("serving.graceful_timeout_s");
    ClusterHarness.await(stopped);
    assertTrue(said.stream().anyMatch(l -> l.contains("graceful timeout: 1 request(s) still in flight are cut")), String.valueOf(said));
    Reply cut = ClusterHarness.await(slow);
    assertEquals(503, cut.status(), "the request past the timeout was cut: " + cut.body());
    assertEquals("shutting_down", cut.json().getJsonObject("error").getString("type"), cut.body());
    assertTrue(cut.json().getJsonObject("error").getString("message").contains("serving.graceful_timeout_s"), cut.body());
    List<JsonObject> rows = journalRows();
    assertEquals(1, rows.size(), rows.toString());
    assertEquals("failed", rows.get(0).getString("terminal"), "a cut request is journaled as cut, not as a disconnect: " + rows);
    assertEquals("graceful_timeout", rows.get(0).getString("reason"), rows.toString());
    assertEquals(503, rows.get(0).getInteger("status"), rows.toString());
    assertEquals(0, rows.get(0).getInteger("output_len"), "the client got none of the output assembled: " + rows);
    assertTrue(rows.get(0).getJsonArray("attempt_failures").isEmpty(), "no evidence against its engines: " + rows);
  }

  @Test
  void aStreamPastTheGracefulTimeoutEndsWithATerminalErrorEvent() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(20, 0, 200), NarwhalNode.PreflightMode.SKIP, line -> { }));
    Promise<Void> firstChunk = Promise.promise();
    StringBuilder streamed = new StringBuilder();
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json");
    Future<Integer> stream = Future.future(p -> context.runOnContext(v -> http.request(options)
        .compose(req -> req.send(completion(50).put("stream", true).toBuffer()))
        .compose(resp -> {
          resp.handler(b -> {
            streamed.append(b);
            firstChunk.tryComplete();
          });
          return resp.end().map(resp.statusCode());
        }).onComplete(p)));
    ClusterHarness.await(firstChunk.future());
    ManualClock clock = new ManualClock();
    Future<Void> stopped = node.shutdown(line -> { }, clock);
    clock.end("serving.graceful_timeout_s");
    assertEquals(200, ClusterHarness.await(stream).intValue(), "the stream was committed before the stop");
    ClusterHarness.await(stopped);
    String[] events = streamed.toString().trim().split("\n\n");
    JsonObject last = new JsonObject(events[events.length - 1].substring("data: ".length()));
    assertEquals("shutting_down", last.getJsonObject("error").getString("type"), streamed.toString());
    assertEquals(503, last.getJsonObject("error").getInteger("code"), streamed.toString());
    assertFalse(streamed.toString().contains("[DONE]"), "a cut stream is not a finished one: " + streamed);
    List<JsonObject> rows = journalRows();
    assertEquals(1, rows.size(), rows.toString());
    assertEquals("failed", rows.get(0).getString("terminal"), rows.toString());
    assertEquals("graceful_timeout", rows.get(0).getString("reason"), rows.toString());
  }

  @Test
  void aRouterNoBalancerSendsToSkipsTheDrainDelay() throws Exception {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(fleet(20, 30, 50), NarwhalNode.PreflightMode.SKIP, line -> { }));
    ManualClock clock = new ManualClock();
    List<String> said = new CopyOnWriteArrayList<>();
    ClusterHarness.await(node.shutdown(said::add, clock, false));
    assertFalse(clock.asked("serving.drain_delay_s"), "the single-node demo stops at once: " + said);
    assertTrue(said.get(said.size() - 1).startsWith("narwhal: stopped"), String.valueOf(said));
  }

  @AfterEach
  void close() {
    ClusterHarness.await(http.close().eventually(client::close));
  }
}
