package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Router replicas in a real Hazelcast cluster on 127.0.0.1 (TCP-IP join, multicast off, a random cluster name and
 * base port per harness), each started as {@code narwhal serve --cluster} starts one ({@link NarwhalNode}: placement,
 * breaker, router on port 0), in front of simulated engines on port 0 that all replicas share. Test-thread helpers
 * block on futures with a bound; conditions are awaited by re-checking on Vert.x timers.
 */
final class ClusterHarness implements AutoCloseable {
  static final String MODEL = SimEngineOptions.DEFAULT_MODEL;
  static final String TOKEN = "cluster-test-token";
  static final UnaryOperator<String> ENV = name -> "NARWHAL_ADMIN_TOKEN".equals(name) ? TOKEN : null;

  final Vertx engineVertx = Vertx.vertx();
  final Map<String, SimEngine> engines = new LinkedHashMap<>();
  final List<NarwhalNode> replicas = new ArrayList<>();
  final String clusterName = "narwhal-test-" + UUID.randomUUID();
  final int basePort = ClusterPorts.base();
  private final HttpClientAgent http = engineVertx.createHttpClient();
  private final io.vertx.core.Context context = engineVertx.getOrCreateContext();
  private JsonObject fleet;

  private ClusterHarness() {
  }

  /** Starts engines "P0:prefill", "D0:decode", … ; {@code tune} edits the generated fleet JSON (recovery, timeouts). */
  static ClusterHarness start(List<String> engineSpecs, UnaryOperator<JsonObject> tune,
                              BiConsumer<String, SimEngineOptions> simTune) {
    ClusterHarness h = new ClusterHarness();
    for (String spec : engineSpecs) {
      String[] parts = spec.split(":");
      SimEngineOptions options = new SimEngineOptions().setName(parts[0]).setRole(parts[1]).setPort(0).setSideChannelPort(0);
      simTune.accept(parts[0], options);
      h.engines.put(parts[0], await(SimEngine.start(h.engineVertx, options)));
    }
    JsonArray fleet = new JsonArray();
    h.engines.forEach((iid, sim) -> fleet.add(new JsonObject().put("iid", iid).put("url", sim.url()).put("role", sim.options().getRole())));
    h.fleet = tune.apply(new JsonObject().put("model", MODEL).put("engines", fleet)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", 5))
        .put("placement", new JsonObject().put("policy", "least_reserved"))
        .put("cluster", new JsonObject().put("enabled", true).put("name", h.clusterName).put("members", new JsonArray().add("127.0.0.1"))
            .put("port", h.basePort).put("host", "127.0.0.1")));
    return h;
  }

  /** {@code fleet} with a cluster secret every replica shares (a fresh 48-byte file): its values and messages are tagged. */
  static JsonObject withSecret(JsonObject fleet) {
    try {
      Path secret = Files.createTempFile("narwhal-cluster", ".secret");
      Files.writeString(secret, java.util.Base64.getEncoder().encodeToString(UUID.randomUUID().toString().repeat(2).getBytes()));
      fleet.getJsonObject("cluster").put("secret_file", secret.toString());
      return fleet;
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  /** The fleet config every replica runs, with its own journal file. */
  NarwhalConfig config() {
    try {
      Path journal = Files.createTempFile("narwhal-cluster-journal", ".jsonl");
      return NarwhalConfig.fromJson(fleet.copy().put("journal", new JsonObject().put("path", journal.toString())));
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  JsonObject fleetJson() {
    return fleet.copy();
  }

  /** Starts one more replica (after a passing preflight) and waits until it serves. */
  NarwhalNode addReplica() {
    return addReplica(NarwhalNode.PreflightMode.STRICT);
  }

  NarwhalNode addReplica(NarwhalNode.PreflightMode preflight) {
    return addReplica(preflight, UnaryOperator.identity());
  }

  /** A replica whose breaker reaches the shared state through {@code sharedData} (a wrapper that can stall it). */
  NarwhalNode addReplica(NarwhalNode.PreflightMode preflight, UnaryOperator<io.vertx.core.shareddata.SharedData> sharedData) {
    NarwhalNode node = await(NarwhalNode.start(config(), preflight, line -> { }, ENV, sharedData));
    replicas.add(node);
    return node;
  }

  NarwhalNode replica(int i) {
    return replicas.get(i);
  }

  SimEngine engine(String iid) {
    return engines.get(iid);
  }

  /** Asks a replica's placement for {@code phase} with {@code exclude}; the engine's iid (released at once) or "NO_ENGINE". */
  Future<String> place(NarwhalNode node, Phase phase, List<String> exclude) {
    ReserveRequest request = new ReserveRequest("test-" + UUID.randomUUID(), phase, exclude, null);
    DeliveryOptions local = new DeliveryOptions().setLocalOnly(true).setSendTimeout(2_000);
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE, request.toJson(), local)
        .map(reply -> {
          node.vertx().eventBus().send(Addresses.PLACEMENT_RELEASE, new JsonObject().put("id", reply.body().getString("id")), local);
          return reply.body().getString("iid");
        })
        .recover(err -> err instanceof ReplyException r && r.failureCode() == 503 ? Future.succeededFuture("NO_ENGINE")
            : Future.failedFuture(err));
  }

  /** Whether the replica's placement refuses {@code iid} for {@code phase} when it is the only candidate left. */
  Future<Boolean> refuses(NarwhalNode node, String iid, Phase phase) {
    List<String> others = engines.keySet().stream().filter(e -> !e.equals(iid)).toList();
    return place(node, phase, others).map("NO_ENGINE"::equals);
  }

  /** The replica's breaker view: engines with state, cause, streaks, quarantine end. */
  Future<JsonObject> breaker(NarwhalNode node) {
    return node.vertx().eventBus().<JsonObject>request(Addresses.BREAKER_STATE, new JsonObject(),
        new DeliveryOptions().setLocalOnly(true).setSendTimeout(2_000)).map(m -> m.body());
  }

  static JsonObject engineIn(JsonObject breakerState, String iid) {
    return breakerState.getJsonArray("engines").stream().map(JsonObject.class::cast)
        .filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow();
  }

  /**
   * Sends an admin message from a replica's event bus (any replica's breaker may answer), proving {@code token} as
   * {@code narwhal admin} does; the reply body or the failure.
   */
  Object admin(NarwhalNode via, String command, JsonObject args, String token) {
    DeliveryOptions options = new DeliveryOptions().setSendTimeout(10_000);
    try {
      return via.vertx().eventBus().<JsonObject>request(Addresses.ADMIN,
              narwhal.common.bus.AdminProof.body(token, command, args, System.currentTimeMillis()), options)
          .toCompletionStage().toCompletableFuture().get(15, TimeUnit.SECONDS).body();
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  JsonObject admin(NarwhalNode via, String command, JsonObject args) {
    Object reply = admin(via, command, args, TOKEN);
    if (reply instanceof JsonObject json) return json;
    throw new AssertionError("admin " + command + " failed: " + reply);
  }

  /** A client's answer: status, headers, body. */
  record Answer(int status, io.vertx.core.MultiMap headers, String body) {
  }

  /**
   * Sends a request as a client would, from the harness's own Vert.x context: a client of one replica's Vert.x driven
   * from another's context (or a plain thread) can miss its response.
   */
  Future<Answer> send(RequestOptions options, io.vertx.core.buffer.Buffer body) {
    return Future.future(p -> context.runOnContext(v -> http.request(options).compose(req -> req.send(body))
        .compose(resp -> resp.body().map(b -> new Answer(resp.statusCode(), resp.headers(), b.toString())))
        .onComplete(p)));
  }

  /** POSTs a completion to a replica's router; the status. */
  int complete(NarwhalNode node) {
    JsonObject body = new JsonObject().put("model", MODEL).put("prompt", "The narwhal is").put("max_tokens", 4);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json");
    return await(Future.<Integer>future(p -> context.runOnContext(v -> http.request(options)
        .compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode()))
        .onComplete(p))));
  }

  /**
   * Waits until {@code check} holds, re-checking every 20 ms on a timer, for at most {@code timeoutMs}; fails with
   * {@code what} otherwise. Returns how long it took.
   */
  long awaitTrue(String what, long timeoutMs, Supplier<Future<Boolean>> check) {
    long start = System.nanoTime();
    long deadline = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    Promise<Void> done = Promise.promise();
    context.runOnContext(v -> poll(check, deadline, done));
    try {
      done.future().toCompletionStage().toCompletableFuture().get(timeoutMs + 5_000, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new AssertionError("not within " + timeoutMs + " ms: " + what, e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  private void poll(Supplier<Future<Boolean>> check, long deadline, Promise<Void> done) {
    check.get().otherwise(false).onSuccess(ok -> {
      if (ok) {
        done.complete();
      } else if (System.nanoTime() > deadline) {
        done.fail(new IllegalStateException("condition still false"));
      } else {
        engineVertx.setTimer(20, t -> poll(check, deadline, done));
      }
    });
  }

  /** Whether {@code check} holds on every replica listed. */
  static Future<Boolean> all(List<NarwhalNode> nodes, java.util.function.Function<NarwhalNode, Future<Boolean>> check) {
    List<Future<Boolean>> checks = nodes.stream().map(check).toList();
    return Future.all(checks).map(v -> checks.stream().allMatch(Future::result));
  }

  static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new AssertionError(e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Override
  public void close() {
    for (int i = replicas.size() - 1; i >= 0; i--) {
      try {
        replicas.get(i).close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (Exception ignored) {
        // a replica a test already stopped
      }
    }
    await(http.close().eventually(engineVertx::close));
  }
}
