package narwhal.router;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import narwhal.breaker.BreakerVerticle;
import narwhal.placement.PlacementVerticle;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.UnaryOperator;

/**
 * A real router in front of real simulated engines, all on port 0: engines are started from
 * (iid, role) pairs, the fleet config is generated around them, preflight fills the attested facts,
 * then placement and the router are deployed. Test-thread helpers block on futures with a bound.
 */
final class RouterHarness implements AutoCloseable {
  static final String MODEL = SimEngineOptions.DEFAULT_MODEL;
  static final String ADMIN_TOKEN = "test-admin-token";
  /** A fleet file naming this variable in {@code engine.engine_api_key_env} gets {@link #ENGINE_KEY} from {@link #ENV}. */
  static final String ENGINE_KEY_ENV = "NARWHAL_TEST_ENGINE_KEY";
  static final String ENGINE_KEY = "sk-test-engine-key";
  /** The environment every part of the harness reads: the admin token and the engines' API key. */
  static final UnaryOperator<String> ENV = name -> switch (name) {
    case "NARWHAL_ADMIN_TOKEN" -> ADMIN_TOKEN;
    case ENGINE_KEY_ENV -> ENGINE_KEY;
    default -> null;
  };

  final Map<String, SimEngine> engines = new LinkedHashMap<>();
  final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  final Vertx vertx = Vertx.builder()
      .with(new io.vertx.core.VertxOptions().setMetricsOptions(new io.vertx.micrometer.MicrometerMetricsOptions().setEnabled(true)))
      .withMetrics(GuardedMetricsFactory.micrometer(registry)).build();
  final Path journal;
  final HttpClientAgent http = vertx.createHttpClient();
  private final io.vertx.core.Context context = vertx.getOrCreateContext();
  /** How far the breaker's clock runs ahead of the wall clock: tests move it to end quarantines and readmission waits. */
  final java.util.concurrent.atomic.AtomicLong clockAhead = new java.util.concurrent.atomic.AtomicLong();
  NarwhalConfig config;
  RouterVerticle router;
  /** The strict preflight the harness passed before deploying the router. */
  PreflightReport preflight;

  private RouterHarness() throws Exception {
    journal = Files.createTempFile("narwhal-journal", ".jsonl");
  }

  /** Starts engines "P0:prefill", "D0:decode", … and a router over them; {@code tune} edits the generated fleet JSON. */
  static RouterHarness start(List<String> engineSpecs, UnaryOperator<JsonObject> tune) throws Exception {
    return start(engineSpecs, tune, (iid, options) -> { });
  }

  /** As above; {@code simTune} adjusts each engine's simulator options (latency, lease) before it starts. */
  static RouterHarness start(List<String> engineSpecs, UnaryOperator<JsonObject> tune,
                             BiConsumer<String, SimEngineOptions> simTune) throws Exception {
    return start(engineSpecs, tune, simTune, Map.of());
  }

  /** As above; {@code env} is the environment the router and breaker read (besides the admin token). */
  static RouterHarness start(List<String> engineSpecs, UnaryOperator<JsonObject> tune,
                             BiConsumer<String, SimEngineOptions> simTune, Map<String, String> env) throws Exception {
    return start(engineSpecs, tune, simTune, env, java.time.Clock.systemUTC());
  }

  /** As above; the engines run on {@code simClock} (a fixed one makes their answers byte for byte repeatable). */
  static RouterHarness start(List<String> engineSpecs, UnaryOperator<JsonObject> tune,
                             BiConsumer<String, SimEngineOptions> simTune, Map<String, String> env,
                             java.time.Clock simClock) throws Exception {
    UnaryOperator<String> environment = name -> env.containsKey(name) ? env.get(name) : ENV.apply(name);
    RouterHarness h = new RouterHarness();
    for (String spec : engineSpecs) {
      String[] parts = spec.split(":");
      SimEngineOptions options = new SimEngineOptions().setName(parts[0]).setRole(parts[1]).setPort(0).setSideChannelPort(0);
      simTune.accept(parts[0], options);
      h.engines.put(parts[0], await(SimEngine.start(h.vertx, options, simClock)));
    }
    JsonArray fleet = new JsonArray();
    h.engines.forEach((iid, sim) -> fleet.add(new JsonObject().put("iid", iid).put("url", sim.url()).put("role", sim.options().getRole())));
    JsonObject json = new JsonObject().put("model", MODEL).put("engines", fleet)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("journal", new JsonObject().put("path", h.journal.toString()))
        .put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", 5))
        // Fault tests aim at engines by taking turns; tests of placement itself put their own placement section.
        .put("placement", new JsonObject().put("policy", "least_reserved"));
    h.config = NarwhalConfig.fromJson(tune.apply(json));
    EngineFacts facts = new EngineFacts();
    h.preflight = await(new Preflight(h.vertx, h.config, facts, environment).run(c -> { }));
    if (!h.preflight.passed()) throw new IllegalStateException(h.preflight.table());
    h.engines.values().forEach(SimEngine::clearRequests);
    await(h.vertx.deployVerticle(new PlacementVerticle(() -> h.config, h.registry, environment)));
    await(h.vertx.deployVerticle(new BreakerVerticle(() -> h.config, h.registry,
        () -> System.currentTimeMillis() + h.clockAhead.get(), environment)));
    h.router = new RouterVerticle(() -> h.config, facts, h.registry, 0, () -> List.of("local"), environment);
    await(h.vertx.deployVerticle(h.router));
    return h;
  }

  static RouterHarness start(List<String> engineSpecs) throws Exception {
    return start(engineSpecs, UnaryOperator.identity());
  }

  /** Clears every engine's faults and request log: each test starts from a clean fleet. */
  void resetEngines() {
    engines.values().forEach(e -> {
      e.faults().clear();
      e.clearRequests();
    });
  }

  SimEngine engine(String iid) {
    return engines.get(iid);
  }

  /** A response read whole: status, headers we care about, body. */
  record Reply(int status, String requestId, String retryAfter, String contentType, String body, io.vertx.core.MultiMap headers) {
    String header(String name) {
      return headers.get(name);
    }

    JsonObject json() {
      return new JsonObject(body);
    }

    JsonObject error() {
      return json().getJsonObject("error");
    }

    /** The data lines of an SSE body, in order. */
    List<String> events() {
      List<String> out = new ArrayList<>();
      for (String line : body.split("\n")) {
        if (line.startsWith("data: ")) out.add(line.substring(6));
      }
      return out;
    }

    /** The text the SSE body carried, joined. */
    String streamedText() {
      StringBuilder text = new StringBuilder();
      for (String e : events()) {
        if (e.equals("[DONE]")) continue;
        text.append(outputText(new JsonObject(e)));
      }
      return text.toString();
    }
  }

  /** The generated text of one frame as a JSON tree (docs/errors.md): completions' {@code text}, chat's reasoning and content deltas. */
  /** A prompt of {@code n} words, each one token for the simulator's tokenizer. */
  static String words(int n) {
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < n; i++) text.append(i == 0 ? "" : " ").append("w").append(i % 97);
    return text.toString();
  }

  static String outputText(JsonObject frame) {
    if (!(frame.getValue("choices") instanceof JsonArray choices)) return "";
    StringBuilder out = new StringBuilder();
    for (Object c : choices) {
      if (!(c instanceof JsonObject choice)) continue;
      appendString(out, choice.getValue("text"));
      if (choice.getValue("delta") instanceof JsonObject delta) {
        appendString(out, delta.getValue("reasoning_content"));
        appendString(out, delta.getValue("reasoning"));
        appendString(out, delta.getValue("content"));
      }
    }
    return out.toString();
  }

  private static void appendString(StringBuilder out, Object value) {
    if (value instanceof String s) out.append(s);
  }

  Reply post(String path, JsonObject body) {
    return post(path, body.toBuffer(), Map.of());
  }

  /** Posts once placement has applied the state events published before (see {@link #placementSettled}). */
  Reply post(String path, Buffer body, Map<String, String> headers) {
    placementSettled();
    return send(routerUrl() + path, HttpMethod.POST, body, headers);
  }

  Reply get(String path) {
    return get(path, Map.of());
  }

  Reply get(String path, Map<String, String> headers) {
    return send(routerUrl() + path, HttpMethod.GET, null, headers);
  }

  Reply direct(SimEngine engine, String path, JsonObject body) {
    return send(engine.url() + path, HttpMethod.POST, body.toBuffer(), Map.of());
  }

  Reply direct(SimEngine engine, String path, JsonObject body, Map<String, String> headers) {
    return send(engine.url() + path, HttpMethod.POST, body.toBuffer(), headers);
  }

  /** Starts a POST and returns at once: for requests that must be in flight together. */
  Future<Reply> postAsync(String path, JsonObject body) {
    return sendAsync(routerUrl() + path, HttpMethod.POST, body.toBuffer(), Map.of());
  }

  /** The same with the caller's headers. */
  Future<Reply> postAsync(String path, JsonObject body, Map<String, String> headers) {
    return sendAsync(routerUrl() + path, HttpMethod.POST, body.toBuffer(), headers);
  }

  /** Any method on a router path, with the caller's headers (none added but {@code content-type}). */
  Reply request(HttpMethod method, String path, Buffer body, Map<String, String> headers) {
    return send(routerUrl() + path, method, body, headers);
  }

  private Reply send(String url, HttpMethod method, Buffer body, Map<String, String> headers) {
    return await(sendAsync(url, method, body, headers));
  }

  private Future<Reply> sendAsync(String url, HttpMethod method, Buffer body, Map<String, String> headers) {
    RequestOptions options = new RequestOptions().setMethod(method).setAbsoluteURI(url).putHeader("content-type", "application/json");
    headers.forEach(options::putHeader);
    return onContext(() -> http.request(options)
        .compose(req -> body == null ? req.send() : req.send(body))
        .compose(resp -> resp.body().map(b -> new Reply(resp.statusCode(), resp.getHeader("x-request-id"),
            resp.getHeader("retry-after"), resp.getHeader("content-type"), b.toString(),
            io.vertx.core.MultiMap.caseInsensitiveMultiMap().addAll(resp.headers())))));
  }

  /**
   * Runs client work on a Vert.x context: composed from the test thread, a response's body can arrive before
   * its handler is attached and the request then never completes (observed with Vert.x 5).
   */
  <T> Future<T> onContext(java.util.function.Supplier<Future<T>> work) {
    return Future.future(p -> context.runOnContext(v -> work.get().onComplete(p)));
  }

  String routerUrl() {
    return "http://127.0.0.1:" + router.actualPort();
  }

  /** Engine event rows (state changes, probes) written to the journal so far. */
  List<JsonObject> journalEvents() throws Exception {
    return Files.readAllLines(journal).stream().filter(l -> !l.isBlank()).map(JsonObject::new)
        .filter(row -> row.containsKey("event")).toList();
  }

  /** Sends an admin command on the bus with {@code token}; returns the reply body, or the failure. */
  Object admin(String command, JsonObject args, String token) {
    io.vertx.core.eventbus.DeliveryOptions options = new io.vertx.core.eventbus.DeliveryOptions();
    if (token != null) options.addHeader("token", token);
    try {
      return vertx.eventBus().<JsonObject>request(narwhal.common.bus.Addresses.ADMIN,
          new JsonObject().put("command", command).put("args", args), options).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS).body();
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  JsonObject admin(String command, JsonObject args) {
    Object reply = admin(command, args, ADMIN_TOKEN);
    if (reply instanceof JsonObject json) return json;
    throw new AssertionError("admin " + command + " failed: " + reply);
  }

  /** Waits until the journal holds at least {@code n} request rows and returns them. */
  List<JsonObject> journalRows(int n) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      List<JsonObject> rows = Files.readAllLines(journal).stream().filter(l -> !l.isBlank()).map(JsonObject::new)
          .filter(row -> row.containsKey("rid")).map(RouterHarness::checkedTiming).toList();
      if (rows.size() >= n || System.nanoTime() > deadline) return rows;
      await(Future.<Void>future(p -> vertx.setTimer(20, t -> p.complete())));
    }
  }

  /** Every journal row keeps {@code ttft_s ≤ first_byte_s ≤ duration_s} where they are present. */
  static JsonObject checkedTiming(JsonObject row) {
    Double ttft = row.getDouble("ttft_s");
    Double firstByte = row.getDouble("first_byte_s");
    double duration = row.getDouble("duration_s");
    if (ttft != null && ttft > duration) throw new AssertionError("ttft_s > duration_s: " + row);
    if (firstByte != null && (firstByte > duration || (ttft != null && ttft > firstByte))) {
      throw new AssertionError("timing out of order: " + row);
    }
    return row;
  }

  /** Waits for the journal row of a request, by the router's {@code rid} or the client's own id (which its answer then carries). */
  JsonObject journalRow(String rid) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      for (String line : Files.readAllLines(journal)) {
        if (!line.isBlank() && line.contains(rid)) {
          JsonObject row = new JsonObject(line);
          if (rid.equals(row.getString("rid")) || rid.equals(row.getString("client_rid"))) return checkedTiming(row);
        }
      }
      if (System.nanoTime() > deadline) throw new AssertionError("no journal row for " + rid);
      await(Future.<Void>future(p -> vertx.setTimer(20, t -> p.complete())));
    }
  }

  /**
   * Returns once placement has applied every state event published before the call: a request to it queues behind
   * them on its context. Routers read placement's table directly, so a test that publishes a state change waits here
   * before it sends the request that must see it.
   */
  void placementSettled() {
    await(vertx.eventBus().request(narwhal.common.bus.Addresses.PLACEMENT_STATE, new JsonObject()));
  }

  /** Total reservations placement holds now, as {@code /narwhal/state} reports them. */
  int reservations() {
    return get("/narwhal/state").json().getInteger("reservations");
  }

  static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("future did not complete: " + e, e);
    }
  }

  @Override
  public void close() throws Exception {
    await(vertx.close());
    Files.deleteIfExists(journal);
  }
}
