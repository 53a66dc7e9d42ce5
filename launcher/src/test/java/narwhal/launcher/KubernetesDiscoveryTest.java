package narwhal.launcher;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Engines discovered from the Kubernetes API (issue 42, item 1) against fabric8's API server stand-in in CRUD mode and
 * real simulated engines at the pods' addresses: pods appear and become ready and serve, terminate and leave, are
 * recreated at new addresses and re-pointed, all under load without a failed request; the API going away leaves the
 * engines in place and says stale; a 403 is named.
 */
@Timeout(120)
class KubernetesDiscoveryTest {
  private static final String NAMESPACE = "inference";
  private static final int CLIENTS = 3;

  private final Vertx client = Vertx.vertx();
  private final HttpClientAgent http = client.createHttpClient();
  private final Map<String, SimEngine> sims = new HashMap<>();
  private final CompletionClients clients = new CompletionClients(client, () -> this.node.port());
  private final List<Integer> statuses = clients.statuses;
  private KubernetesMockServer api;
  private KubernetesClient kube;
  private ApiProxy proxy;
  private NarwhalNode node;
  private Path fleetFile;

  @AfterEach
  void close() {
    if (node != null) ClusterHarness.await(node.close());
    if (kube != null) kube.close();
    if (api != null) api.shutdown();
    sims.values().forEach(s -> ClusterHarness.await(s.close()));
    ClusterHarness.await(client.close());
  }

  @Test
  void podsThatComeGoAndMoveAreEnginesWithoutAFailedRequest() throws Exception {
    startApi();
    startRouter("http://127.0.0.1:" + proxy.port());
    create(pod("vllm-prefill-0", "prefill", sim("P0", "prefill").port()));
    create(pod("vllm-decode-0", "decode", sim("D0", "decode").port()));
    create(pod("vllm-decode-1", "decode", sim("D1", "decode").port()));
    await(() -> Set.of("vllm-prefill-0", "vllm-decode-0", "vllm-decode-1").equals(serving()), "the three pods serve");
    JsonObject discovery = state().getJsonObject("discovery");
    assertEquals(false, discovery.getBoolean("stale"), discovery.encode());
    assertEquals(3, discovery.getInteger("engines"), discovery.encode());

    AtomicBoolean stop = new AtomicBoolean();
    Future<Void> running = load(stop);
    awaitMoreRequests(10, "the load runs");

    // a pod not ready yet is no engine; once ready it serves
    SimEngine d2 = sim("D2", "decode");
    create(new PodBuilder(pod("vllm-decode-2", "decode", d2.port())).editStatus().editFirstCondition().withStatus("False")
        .endCondition().endStatus().build());
    awaitMoreRequests(20, "requests while vllm-decode-2 is not ready");
    assertEquals(0, clientDecodes(d2), "a pod that is not ready gets no leg");
    kube.pods().inNamespace(NAMESPACE).resource(pod("vllm-decode-2", "decode", d2.port())).update();
    await(() -> clientDecodes(d2) >= 3, "vllm-decode-2 serves once ready");

    // terminating: it leaves at once, requests keep succeeding
    Pod terminating = new PodBuilder(kube.pods().inNamespace(NAMESPACE).withName("vllm-decode-0").get()).editMetadata()
        .withDeletionTimestamp("2026-12-05T00:00:00Z").endMetadata().build();
    kube.pods().inNamespace(NAMESPACE).resource(terminating).update();
    await(() -> !serving().contains("vllm-decode-0"), "the terminating pod leaves");
    long d0After = clientDecodes(sims.get("D0"));
    awaitMoreRequests(20, "requests after vllm-decode-0 left");
    assertTrue(clientDecodes(sims.get("D0")) <= d0After + CLIENTS, "no new leg reaches the terminating pod");

    // recreated under the same name at a new address: re-pointed
    SimEngine moved = sim("D1-moved", "decode");
    kube.pods().inNamespace(NAMESPACE).withName("vllm-decode-1").delete();
    create(pod("vllm-decode-1", "decode", moved.port()));
    await(() -> clientDecodes(moved) >= 3, "the recreated pod serves at its new address");
    awaitMoreRequests(10, "requests after the move");
    stop.set(true);
    ClusterHarness.await(running);
    assertEquals(List.of(), statuses.stream().filter(s -> s != 200).toList(), "no request failed: " + statuses.size() + " sent");
  }

  @Test
  void theApiGoingAwayKeepsTheEnginesAndSaysStale() throws Exception {
    startApi();
    startRouter("http://127.0.0.1:" + proxy.port());
    create(pod("vllm-prefill-0", "prefill", sim("P0", "prefill").port()));
    create(pod("vllm-decode-0", "decode", sim("D0", "decode").port()));
    await(() -> serving().size() == 2, "the two pods serve");

    proxy.down();
    await(() -> state().getJsonObject("discovery").getBoolean("stale"), "discovery says stale");
    assertEquals(1.0, staleGauge(), "narwhal_discovery_stale is 1");
    for (int i = 0; i < 10; i++) assertEquals(200, ClusterHarness.await(completion(i % 2 == 0)), "the last known engines serve");
    assertEquals(Set.of("vllm-prefill-0", "vllm-decode-0"), serving());

    // a pod that went while the API was away leaves once it answers again
    kube.pods().inNamespace(NAMESPACE).withName("vllm-decode-0").delete();
    create(pod("vllm-decode-1", "decode", sim("D1", "decode").port()));
    proxy.up();
    await(() -> !state().getJsonObject("discovery").getBoolean("stale"), "discovery fresh again");
    await(() -> Set.of("vllm-prefill-0", "vllm-decode-1").equals(serving()), "the changes while away are applied");
    assertEquals(0.0, staleGauge());
  }

  @Test
  void aRefusalNamesTheVerbAndResourceTheServiceAccountLacks() throws Exception {
    HttpServer forbidding = ClusterHarness.await(client.createHttpServer().requestHandler(req -> req.response().setStatusCode(403)
        .putHeader("content-type", "application/json")
        .end(new JsonObject().put("kind", "Status").put("apiVersion", "v1").put("status", "Failure").put("reason", "Forbidden")
            .put("code", 403).put("message", "pods is forbidden: User \"system:serviceaccount:inference:narwhal\" cannot list "
                + "resource \"pods\" in API group \"\" in the namespace \"inference\"").encode()))
        .listen(0, "127.0.0.1"));
    startRouter("http://127.0.0.1:" + forbidding.actualPort());
    await(() -> state().getJsonObject("discovery").getString("error") != null, "the refusal is seen");
    JsonObject discovery = state().getJsonObject("discovery");
    assertTrue(discovery.getBoolean("stale"), discovery.encode());
    assertTrue(discovery.getString("error").contains("forbidden (403): the service account needs get, list and watch on pods in "
        + NAMESPACE), discovery.encode());
    assertEquals(1.0, staleGauge());
  }

  @Test
  void aFileReloadKeepsTheDiscoveredEnginesAndAFlappingPodEndsWhereItStands() throws Exception {
    startApi();
    startRouter("http://127.0.0.1:" + proxy.port());
    create(pod("vllm-prefill-0", "prefill", sim("P0", "prefill").port()));
    create(pod("vllm-decode-0", "decode", sim("D0", "decode").port()));
    SimEngine flapping = sim("D1", "decode");
    create(pod("vllm-decode-1", "decode", flapping.port()));
    await(() -> serving().size() == 3, "the three pods serve");

    // the fleet file changes (a serving key): the engines from discovery stay
    JsonObject file = new JsonObject(Files.readString(fleetFile));
    file.put("serving", new JsonObject().put("max_attempts", 2));
    Files.writeString(fleetFile, file.encodePrettily());
    ClusterHarness.await(node.reloadNow());
    assertEquals(Set.of("vllm-prefill-0", "vllm-decode-0", "vllm-decode-1"), serving(), "a file reload keeps discovered engines");

    AtomicBoolean stop = new AtomicBoolean();
    Future<Void> running = load(stop);
    Pod ready = pod("vllm-decode-1", "decode", flapping.port());
    Pod unready = new PodBuilder(ready).editStatus().editFirstCondition().withStatus("False").endCondition().endStatus().build();
    for (int i = 0; i < 20; i++) {
      kube.pods().inNamespace(NAMESPACE).resource(i % 2 == 0 ? unready : ready).update();
      long pause = 50 + 37 * (i % 5);
      ClusterHarness.await(Future.<Void>future(p -> client.setTimer(pause, t -> p.complete())));
    }
    kube.pods().inNamespace(NAMESPACE).resource(unready).update();
    await(() -> !serving().contains("vllm-decode-1"), "the pod, not ready at last, is no engine");
    // a recombination of an earlier flip may still land: the last one applied is the pod's last state
    awaitMoreRequests(10, "requests while the last flips settle");
    await(() -> !serving().contains("vllm-decode-1") && state().getJsonObject("discovery").getInteger("engines") == 2,
        "the pod, not ready at last, is no engine");
    long flappingLegs = clientDecodes(flapping);
    awaitMoreRequests(20, "requests after the flapping");
    assertTrue(clientDecodes(flapping) <= flappingLegs + CLIENTS, "no new leg on the pod that is not ready");
    kube.pods().inNamespace(NAMESPACE).resource(ready).update();
    await(() -> serving().contains("vllm-decode-1"), "ready again, it serves");
    stop.set(true);
    ClusterHarness.await(running);
    assertEquals(List.of(), statuses.stream().filter(s -> s != 200).toList(), "no request failed: " + statuses.size() + " sent");
    assertEquals(3, state().getJsonObject("discovery").getInteger("engines"));
  }

  /** Two clustered replicas watching the same pods converge on one engine set: no lasting config drift, before or after a move. */
  @Test
  void twoReplicasConvergeOnTheSameEnginesWithoutDrift() throws Exception {
    startApi();
    int base = ClusterPorts.base();
    JsonObject cluster = new JsonObject().put("enabled", true).put("name", "narwhal-discovery-" + java.util.UUID.randomUUID())
        .put("members", new io.vertx.core.json.JsonArray().add("127.0.0.1")).put("port", base).put("host", "127.0.0.1");
    create(pod("vllm-prefill-0", "prefill", sim("P0", "prefill").port()));
    create(pod("vllm-decode-0", "decode", sim("D0", "decode").port()));
    create(pod("vllm-decode-1", "decode", sim("D1", "decode").port()));
    NarwhalNode second = null;
    try {
      startRouter("http://127.0.0.1:" + proxy.port(), cluster);
      NarwhalNode first = node;
      Path firstFile = fleetFile;
      startRouter("http://127.0.0.1:" + proxy.port(), cluster);
      second = node;
      for (NarwhalNode replica : List.of(first, second)) {
        node = replica;
        await(() -> serving().size() == 3 && !state().getJsonObject("config_drift").getBoolean("drifted"),
            "each replica serves the three pods and sees no drift");
      }
      SimEngine moved = sim("D1-moved", "decode");
      kube.pods().inNamespace(NAMESPACE).withName("vllm-decode-1").delete();
      create(pod("vllm-decode-1", "decode", moved.port()));
      for (NarwhalNode replica : List.of(first, second)) {
        node = replica;
        await(() -> serving().size() == 3 && !state().getJsonObject("config_drift").getBoolean("drifted"),
            "both replicas follow the move and agree again");
      }
      // the other decode pod stops being ready: every decode now goes to the moved one, on both replicas
      kube.pods().inNamespace(NAMESPACE).resource(new PodBuilder(pod("vllm-decode-0", "decode", sims.get("D0").port()))
          .editStatus().editFirstCondition().withStatus("False").endCondition().endStatus().build()).update();
      for (NarwhalNode replica : List.of(first, second)) {
        node = replica;
        await(() -> Set.of("vllm-prefill-0", "vllm-decode-1").equals(serving())
            && !state().getJsonObject("config_drift").getBoolean("drifted"), "both replicas drop the unready pod and agree");
        // make before break: the old address (its engine still answers here) serves until the new one passed its checks
        long reached = clientDecodes(moved);
        await(() -> ClusterHarness.await(completion(false)) == 200 && clientDecodes(moved) > reached,
            "this replica's legs reach the moved pod's new address");
      }
      long d0Before = clientDecodes(sims.get("D0"));
      long movedBefore = clientDecodes(moved);
      for (NarwhalNode replica : List.of(first, second)) {
        node = replica;
        for (int i = 0; i < 6; i++) assertEquals(200, ClusterHarness.await(completion(i % 2 == 0)));
      }
      assertEquals(12, clientDecodes(moved) - movedBefore, "the moved pod, at its new address, serves every decode of both "
          + "replicas; D0 got " + (clientDecodes(sims.get("D0")) - d0Before));
      node = first;
      fleetFile = firstFile;
    } finally {
      if (second != null) ClusterHarness.await(second.close());
    }
  }

  private void startApi() {
    api = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
    api.init(InetAddress.getLoopbackAddress(), 0);
    kube = api.createClient();
    proxy = ClusterHarness.await(ApiProxy.start(client, api.getPort()));
  }

  private void startRouter(String apiUrl) throws Exception {
    startRouter(apiUrl, null);
  }

  private void startRouter(String apiUrl, JsonObject cluster) throws Exception {
    fleetFile = Files.createTempDirectory("narwhal-discovery").resolve("fleet.json");
    JsonObject fleet = new JsonObject().put("model", ClusterHarness.MODEL)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 2).put("liveness_every", 100_000))
        .put("journal", new JsonObject().put("path", fleetFile.resolveSibling("journal.jsonl").toString()))
        .put("discovery", new JsonObject().put("kubernetes", new JsonObject().put("enabled", true).put("api_url", apiUrl)
            .put("namespace", NAMESPACE).put("prefill_selector", "app=vllm,narwhal/role=prefill")
            .put("decode_selector", "app=vllm,narwhal/role=decode").put("port", "http")));
    if (cluster != null) fleet.put("cluster", cluster);
    Files.writeString(fleetFile, fleet.encodePrettily());
    node = ClusterHarness.await(NarwhalNode.start(NarwhalConfig.parse(Files.readString(fleetFile)),
        NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV));
    ClusterHarness.await(node.watch(fleetFile));
  }

  private SimEngine sim(String name, String role) {
    SimEngine sim = ClusterHarness.await(SimEngine.start(client, new SimEngineOptions().setName(name).setRole(role).setPort(0)
        .setSideChannelPort(0)));
    sims.put(name, sim);
    return sim;
  }

  private static Pod pod(String name, String role, int port) {
    return new PodBuilder().withNewMetadata().withName(name).withNamespace(NAMESPACE)
        .addToLabels("app", "vllm").addToLabels("narwhal/role", role).endMetadata()
        .withNewSpec().addNewContainer().withName("vllm").withImage("vllm/vllm-openai").addNewPort().withName("http")
        .withContainerPort(port).endPort().endContainer().endSpec()
        .withNewStatus().withPhase("Running").withPodIP("127.0.0.1").addNewCondition().withType("Ready").withStatus("True")
        .endCondition().endStatus().build();
  }

  private void create(Pod pod) {
    kube.pods().inNamespace(NAMESPACE).resource(pod).create();
  }

  private JsonObject state() {
    return ClusterHarness.await(Future.<JsonObject>future(p -> client.runOnContext(v -> http.request(HttpMethod.GET,
        node.port(), "127.0.0.1", "/narwhal/state").compose(req -> req.send()).compose(resp -> resp.body())
        .map(b -> b.toJsonObject()).onComplete(p))));
  }

  private Set<String> serving() {
    return state().getJsonArray("engines").stream().map(JsonObject.class::cast)
        .filter(e -> "serving".equals(e.getString("state"))).map(e -> e.getString("iid")).collect(Collectors.toSet());
  }

  private double staleGauge() {
    return node.registry().get("narwhal.discovery.stale").gauge().value();
  }

  private void awaitMoreRequests(int n, String what) {
    int now = statuses.size();
    await(() -> statuses.size() >= now + n, what);
  }

  private void await(BooleanSupplier condition, String what) {
    for (int i = 0; i < 2_000; i++) {
      if (condition.getAsBoolean()) return;
      ClusterHarness.await(Future.<Void>future(p -> client.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError("never: " + what);
  }

  private static long clientDecodes(SimEngine sim) {
    return sim.requests().stream().filter(r -> "decode".equals(r.getString("phase"))
        && !r.getString("request_id", "").startsWith("probe-") && !r.getString("request_id", "").startsWith("preflight-")).count();
  }

  /** A TCP relay in front of the API stand-in that can be taken down (every connection cut, new ones refused) and up. */
  private static final class ApiProxy {
    private final Vertx vertx;
    private final int target;
    private final Set<NetSocket> open = ConcurrentHashMap.newKeySet();
    private volatile boolean down;
    private NetServer server;

    private ApiProxy(Vertx vertx, int target) {
      this.vertx = vertx;
      this.target = target;
    }

    static Future<ApiProxy> start(Vertx vertx, int target) {
      ApiProxy proxy = new ApiProxy(vertx, target);
      proxy.server = vertx.createNetServer().connectHandler(proxy::relay);
      return proxy.server.listen(0, "127.0.0.1").map(s -> proxy);
    }

    int port() {
      return server.actualPort();
    }

    void down() {
      down = true;
      open.forEach(NetSocket::close);
    }

    void up() {
      down = false;
    }

    private void relay(NetSocket in) {
      if (down) {
        in.close();
        return;
      }
      in.pause();
      open.add(in);
      vertx.createNetClient().connect(target, "127.0.0.1").onFailure(err -> in.close()).onSuccess(out -> {
        open.add(out);
        in.pipeTo(out);
        out.pipeTo(in);
        in.closeHandler(v -> open.remove(in));
        out.closeHandler(v -> open.remove(out));
        in.resume();
      });
    }
  }

  private Future<Integer> completion(boolean stream) {
    return clients.completion(stream, 6);
  }

  private Future<Void> load(AtomicBoolean stop) {
    return clients.load(stop, CLIENTS);
  }
}
