package narwhal.launcher;

import io.vertx.core.Future;
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

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Make before break (issue 41, item 3): a reload that re-points the only decode engine to an address where nothing
 * answers yet keeps the old address serving; when an engine comes up there, it is swapped in after its checks pass,
 * and no client request fails at any point. A removed engine gets no new leg and its running stream finishes.
 */
@Timeout(90)
class MakeBeforeBreakTest {
  private static final int CLIENTS = 3;

  private final Vertx client = Vertx.vertx();
  private final HttpClientAgent http = client.createHttpClient();
  private final Map<String, SimEngine> sims = new LinkedHashMap<>();
  private final CompletionClients clients = new CompletionClients(client, () -> this.node.port());
  private final List<Integer> statuses = clients.statuses;
  private NarwhalNode node;
  private Path fleetFile;

  @AfterEach
  void close() {
    if (node != null) ClusterHarness.await(node.close());
    sims.values().forEach(s -> ClusterHarness.await(s.close()));
    ClusterHarness.await(client.close());
  }

  private SimEngine sim(String name, String role, int port, int itlMs) {
    SimEngine sim = ClusterHarness.await(SimEngine.start(client, new SimEngineOptions().setName(name).setRole(role).setPort(port)
        .setSideChannelPort(0).setItlMs(itlMs)));
    sims.put(name, sim);
    return sim;
  }

  private JsonObject fleet(Map<String, String> urls) {
    JsonArray engines = new JsonArray();
    urls.forEach((iid, url) -> engines.add(new JsonObject().put("iid", iid).put("url", url)
        .put("role", iid.startsWith("P") ? "prefill" : "decode")));
    return new JsonObject().put("model", ClusterHarness.MODEL).put("engines", engines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 2).put("liveness_every", 100_000))
        .put("journal", new JsonObject().put("path", fleetFile.resolveSibling("journal.jsonl").toString()));
  }

  private void startRouter(Map<String, String> urls) throws Exception {
    fleetFile = Files.createTempDirectory("narwhal-mbb").resolve("fleet.json");
    Files.writeString(fleetFile, fleet(urls).encodePrettily());
    node = ClusterHarness.await(NarwhalNode.start(NarwhalConfig.parse(Files.readString(fleetFile)),
        NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV));
    ClusterHarness.await(node.watch(fleetFile));
  }

  private void await(BooleanSupplier condition, String what) {
    for (int i = 0; i < 2_000; i++) {
      if (condition.getAsBoolean()) return;
      ClusterHarness.await(Future.<Void>future(p -> client.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError("never: " + what);
  }

  /** Waits until {@code n} more requests have ended than had now. */
  private void awaitMoreRequests(int n, String what) {
    int now = statuses.size();
    await(() -> statuses.size() >= now + n, what);
  }

  private static long clientDecodes(SimEngine sim) {
    return sim.requests().stream().filter(r -> "decode".equals(r.getString("phase"))
        && !r.getString("request_id", "").startsWith("probe-") && !r.getString("request_id", "").startsWith("preflight-")).count();
  }

  private static int freePort() {
    return ClusterPorts.unused();
  }

  @Test
  void theOnlyDecodeEngineRepointedKeepsServingUntilItsNewAddressPassesItsChecks() throws Exception {
    sim("P0", "prefill", 0, 0);
    SimEngine old = sim("D0", "decode", 0, 0);
    startRouter(Map.of("P0", sims.get("P0").url(), "D0", old.url()));
    AtomicBoolean stop = new AtomicBoolean();
    Future<Void> running = load(stop);
    await(() -> statuses.size() >= 10, "the load runs");

    int newPort = freePort();
    Files.writeString(fleetFile, fleet(Map.of("P0", sims.get("P0").url(), "D0", "http://127.0.0.1:" + newPort)).encodePrettily());
    await(() -> reloadsApplied() >= 1, "the re-pointing reload applied");
    int atReload = statuses.size();
    long oldBefore = clientDecodes(old);
    await(() -> statuses.size() >= atReload + 30, "requests after the reload");
    assertTrue(clientDecodes(old) > oldBefore, "nothing answers at the new address: the old one keeps serving");

    SimEngine moved = sim("D0-new", "decode", newPort, 0);
    await(() -> clientDecodes(moved) >= 5, "the engine at the new address serves once its checks pass");
    long oldAfterSwap = clientDecodes(old);
    awaitMoreRequests(20, "requests after the swap");
    stop.set(true);
    ClusterHarness.await(running);

    assertTrue(clientDecodes(old) <= oldAfterSwap + CLIENTS, "after the swap the old address gets no new leg");
    assertEquals(List.of(), statuses.stream().filter(s -> s != 200).toList(), "no request failed: " + statuses.size() + " sent");
    String journal = Files.readString(fleetFile.resolveSibling("journal.jsonl"));
    assertTrue(!journal.contains("\"cause\":\"changed\""), "D0 was never ejected for the change");
  }

  @Test
  void aRemovedEngineGetsNoNewLegAndItsRunningStreamFinishes() throws Exception {
    sim("P0", "prefill", 0, 0);
    sim("D0", "decode", 0, 0);
    SimEngine removed = sim("D1", "decode", 0, 200);
    Map<String, String> urls = new LinkedHashMap<>();
    urls.put("P0", sims.get("P0").url());
    urls.put("D1", removed.url());
    startRouter(urls);
    List<Future<Integer>> streams = new CopyOnWriteArrayList<>();
    client.runOnContext(v -> streams.add(completion(true, 30)));
    await(() -> clientDecodes(removed) == 1, "a slow stream runs on D1");

    urls.put("D0", sims.get("D0").url());
    Files.writeString(fleetFile, fleet(urls).encodePrettily());
    await(() -> reloadsApplied() >= 1 && "serving".equals(state("D0")), "D0 added and checked");
    urls.remove("D1");
    Files.writeString(fleetFile, fleet(urls).encodePrettily());
    await(() -> reloadsApplied() >= 2, "D1's removal applied");
    assertTrue(!streams.get(0).isComplete(), "the stream still runs when D1 is removed: " + streams.get(0).result());
    for (int i = 0; i < 10; i++) assertEquals(200, ClusterHarness.await(completion(i % 2 == 0, 6)));
    assertEquals(1, clientDecodes(removed), "no new leg reaches the removed engine: " + removed.requests().stream()
        .map(r -> r.getString("request_id") + "/" + r.getString("phase")).toList());
    assertEquals(200, ClusterHarness.await(streams.get(0)), "its running stream finished");
  }

  @Test
  void aCandidateReplacedOrWithdrawnIsNeverSwappedInAndAHangingOneHoldsNothing() throws Exception {
    sim("P0", "prefill", 0, 0);
    SimEngine old = sim("D0", "decode", 0, 0);
    startRouter(Map.of("P0", sims.get("P0").url(), "D0", old.url()));
    AtomicBoolean stop = new AtomicBoolean();
    Future<Void> running = load(stop);
    await(() -> statuses.size() >= 10, "the load runs");

    int first = freePort();
    int second = freePort();
    reload(fleet(Map.of("P0", sims.get("P0").url(), "D0", "http://127.0.0.1:" + first)), "re-pointed to a dead address");
    reload(fleet(Map.of("P0", sims.get("P0").url(), "D0", "http://127.0.0.1:" + second)), "re-pointed again before the first candidate passed");
    SimEngine superseded = sim("D0-first", "decode", first, 0);
    awaitMoreRequests(30, "requests while the superseded address answers");
    assertEquals(0, clientDecodes(superseded), "a replaced candidate is never swapped in, though it now passes");

    SimEngine newest = sim("D0-second", "decode", second, 0);
    await(() -> clientDecodes(newest) >= 3, "the newest candidate is swapped in once it passes");

    int third = freePort();
    reload(fleet(Map.of("P0", sims.get("P0").url(), "D0", "http://127.0.0.1:" + third)), "re-pointed to a third dead address");
    reload(fleet(Map.of("P0", sims.get("P0").url(), "D0", newest.url())), "and back before it passed");
    SimEngine withdrawn = sim("D0-third", "decode", third, 0);
    awaitMoreRequests(30, "requests while the withdrawn address answers");
    assertEquals(0, clientDecodes(withdrawn), "a withdrawn candidate is forgotten");

    try (ServerSocket silent = new ServerSocket(0)) {
      // accepts connections (the backlog) and never answers a byte
      reload(fleet(Map.of("P0", sims.get("P0").url(), "D0", "http://127.0.0.1:" + silent.getLocalPort())), "re-pointed to an address that never answers");
      long before = clientDecodes(newest);
      awaitMoreRequests(30, "requests while the candidate hangs");
      assertTrue(clientDecodes(newest) > before, "the engine in service keeps serving while the candidate hangs");
      reload(fleet(Map.of("P0", sims.get("P0").url(), "D0", newest.url())), "back to the engine in service");
    }
    awaitMoreRequests(10, "requests after it all");
    stop.set(true);
    ClusterHarness.await(running);
    assertEquals(List.of(), statuses.stream().filter(x -> x != 200).toList(), "no request failed: " + statuses.size() + " sent");
    assertEquals("serving", state("D0"));
  }

  @Test
  void twoDecodeEnginesSwappingAddressesInOneReloadLoseNothing() throws Exception {
    sim("P0", "prefill", 0, 0);
    SimEngine x = sim("D0", "decode", 0, 0);
    SimEngine y = sim("D1", "decode", 0, 0);
    Map<String, String> before = new LinkedHashMap<>();
    before.put("P0", sims.get("P0").url());
    before.put("D0", x.url());
    before.put("D1", y.url());
    startRouter(before);
    AtomicBoolean stop = new AtomicBoolean();
    Future<Void> running = load(stop);
    await(() -> statuses.size() >= 10, "the load runs");
    Map<String, String> swapped = new LinkedHashMap<>(before);
    swapped.put("D0", y.url());
    swapped.put("D1", x.url());
    reload(fleet(swapped), "D0 and D1 swap addresses in one reload");
    await(() -> "serving".equals(state("D0")) && "serving".equals(state("D1")), "both serve after the swap");
    long xBefore = clientDecodes(x);
    long yBefore = clientDecodes(y);
    awaitMoreRequests(30, "requests after the swap");
    stop.set(true);
    ClusterHarness.await(running);
    assertTrue(clientDecodes(x) > xBefore && clientDecodes(y) > yBefore, "both engines still get legs");
    assertEquals(List.of(), statuses.stream().filter(s -> s != 200).toList(), "no request failed: " + statuses.size() + " sent");
  }

  /**
   * Writes {@code fleet} ({@code what} it does) and has the node apply it now; the periodic read may apply it as well,
   * and the same text applied twice is one change.
   */
  private void reload(JsonObject fleet, String what) throws Exception {
    Files.writeString(fleetFile, fleet.encodePrettily());
    ClusterHarness.await(node.reloadNow());
  }

  private double reloadsApplied() {
    return node.registry().find("narwhal.config.reloads").tag("outcome", "applied").counters().stream()
        .mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
  }

  private String state(String iid) {
    JsonObject state = ClusterHarness.await(Future.<JsonObject>future(p -> client.runOnContext(v -> http.request(HttpMethod.GET,
        node.port(), "127.0.0.1", "/narwhal/state").compose(req -> req.send()).compose(resp -> resp.body())
        .map(b -> b.toJsonObject()).onComplete(p))));
    return state.getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid")))
        .map(e -> e.getString("state")).findFirst().orElse("absent");
  }

  private Future<Integer> completion(boolean stream) {
    return clients.completion(stream, 6);
  }

  private Future<Integer> completion(boolean stream, int maxTokens) {
    return clients.completion(stream, maxTokens);
  }

  private Future<Void> load(AtomicBoolean stop) {
    return clients.load(stop, CLIENTS);
  }
}
