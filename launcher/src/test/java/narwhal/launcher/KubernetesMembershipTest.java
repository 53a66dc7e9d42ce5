package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ClusterConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Membership failures are loud (docs/operations.md#running-on-kubernetes): the replica looks up its peers as Hazelcast's
 * Kubernetes discovery does — the Service's EndpointSlices, else its Endpoints — and a refused look-up (RBAC's 403) or
 * an API that does not answer is named in the log, {@code /narwhal/state} and {@code narwhal_cluster_discovery_failing};
 * the ready endpoints are the members expected. The Kubernetes API is an HTTP server answering as the API server does
 * (its paths, its list and Status bodies), since no cluster runs here.
 */
@Timeout(120)
class KubernetesMembershipTest {
  private final Vertx vertx = Vertx.vertx();
  private final List<HttpServerRequest> asked = new CopyOnWriteArrayList<>();
  private volatile Consumer<HttpServerRequest> api = KubernetesMembershipTest::forbidden;
  private HttpServer server;
  private ClusterHarness cluster;

  @AfterEach
  void stop() {
    if (cluster != null) cluster.close();
    ClusterHarness.await(vertx.close());
  }

  private String startApi() {
    server = ClusterHarness.await(vertx.createHttpServer().requestHandler(req -> {
      asked.add(req);
      api.accept(req);
    }).listen(0, "127.0.0.1"));
    return "http://127.0.0.1:" + server.actualPort();
  }

  private static void forbidden(HttpServerRequest req) {
    req.response().setStatusCode(403).putHeader("content-type", "application/json").end(new JsonObject().put("kind", "Status")
        .put("apiVersion", "v1").put("status", "Failure").put("reason", "Forbidden").put("code", 403)
        .put("message", "endpointslices.discovery.k8s.io is forbidden: User \"system:serviceaccount:llm:default\" cannot list "
            + "resource \"endpointslices\" in API group \"discovery.k8s.io\" in the namespace \"llm\"").encode());
  }

  /** EndpointSlices of the service: {@code ready} endpoints ready, one more not ready (a pod starting). */
  private static Consumer<HttpServerRequest> slices(int ready) {
    return req -> {
      if (!req.path().equals("/apis/discovery.k8s.io/v1/namespaces/llm/endpointslices")) {
        req.response().setStatusCode(404).end();
        return;
      }
      JsonArray endpoints = new JsonArray();
      for (int i = 0; i < ready; i++) {
        endpoints.add(new JsonObject().put("addresses", new JsonArray().add("10.0.0." + (i + 1)))
            .put("conditions", new JsonObject().put("ready", true)));
      }
      endpoints.add(new JsonObject().put("addresses", new JsonArray().add("10.0.0.99")).put("conditions", new JsonObject().put("ready", false)));
      req.response().putHeader("content-type", "application/json").end(new JsonObject().put("kind", "EndpointSliceList")
          .put("apiVersion", "discovery.k8s.io/v1").put("items", new JsonArray().add(new JsonObject()
              .put("metadata", new JsonObject().put("name", "narwhal-cluster-abcde")
                  .put("labels", new JsonObject().put("kubernetes.io/service-name", "narwhal-cluster")))
              .put("addressType", "IPv4").put("endpoints", endpoints))).encode());
    };
  }

  /** An API server without EndpointSlices (before Kubernetes 1.21): the Endpoints object answers. */
  private static void endpointsOnly(HttpServerRequest req) {
    if (!req.path().equals("/api/v1/namespaces/llm/endpoints/narwhal-cluster")) {
      req.response().setStatusCode(404).end();
      return;
    }
    req.response().putHeader("content-type", "application/json").end(new JsonObject().put("kind", "Endpoints")
        .put("subsets", new JsonArray().add(new JsonObject().put("addresses", new JsonArray()
            .add(new JsonObject().put("ip", "10.0.0.1")).add(new JsonObject().put("ip", "10.0.0.2")).add(new JsonObject().put("ip", "10.0.0.3")))
            .put("notReadyAddresses", new JsonArray().add(new JsonObject().put("ip", "10.0.0.9"))))).encode());
  }

  @Test
  void theLookUpNamesTheRefusalKeepsTheLastCountAndFallsBackToEndpoints() throws Exception {
    String url = startApi();
    Path account = Files.createTempDirectory("narwhal-serviceaccount");
    Files.writeString(account.resolve("token"), "token-1\n");
    Files.writeString(account.resolve("namespace"), "llm");
    api = slices(2);
    PeerLookup lookup = PeerLookup.start(vertx, new ClusterConfig.Kubernetes("narwhal-cluster", "", url), name -> null, account);
    PeerLookup.Outcome ok = ClusterHarness.await(lookup.lookUp());
    assertNull(ok.error(), ok.toJson().encode());
    assertEquals(2, ok.readyEndpoints(), "a pod not ready yet is not expected");
    HttpServerRequest first = asked.get(asked.size() - 1);
    assertEquals("Bearer token-1", first.getHeader("authorization"), "the service account's token, from the account directory");
    assertEquals("labelSelector=kubernetes.io/service-name%3Dnarwhal-cluster", first.query(), "the namespace from the account directory");

    api = KubernetesMembershipTest::forbidden;
    Files.writeString(account.resolve("token"), "token-2\n");
    PeerLookup.Outcome refused = ClusterHarness.await(lookup.lookUp());
    assertEquals("list endpointslices (discovery.k8s.io) in namespace llm: forbidden (403): the router pods' service account "
        + "needs get/list/watch on endpointslices (discovery.k8s.io) and endpoints in llm; until then this replica runs as a "
        + "cluster of its own", refused.error());
    assertEquals(2, refused.readyEndpoints(), "the last count stands while the look-up fails");
    assertEquals("Bearer token-2", asked.get(asked.size() - 1).getHeader("authorization"), "a rotated token is read again");

    api = KubernetesMembershipTest::endpointsOnly;
    PeerLookup.Outcome old = ClusterHarness.await(lookup.lookUp());
    assertNull(old.error(), old.toJson().encode());
    assertEquals(3, old.readyEndpoints());

    ClusterHarness.await(server.close());
    PeerLookup.Outcome gone = ClusterHarness.await(lookup.lookUp());
    assertTrue(gone.error().startsWith("cannot reach the Kubernetes API at " + url), gone.error());
    lookup.close();
  }

  @Test
  void aReplicaWhosePeerLookUpIsRefusedSaysSoAndExpectsTheReadyPodsOnceAllowed() throws Exception {
    String url = startApi();
    cluster = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), fleet -> {
      fleet.getJsonObject("cluster").remove("members");
      fleet.getJsonObject("cluster").put("discovery", "kubernetes").put("kubernetes", new JsonObject()
          .put("service_name", "narwhal-cluster").put("namespace", "llm").put("api_url", url));
      return fleet.put("server", fleet.getJsonObject("server").put("health_port", 0));
    }, (iid, options) -> { });
    NarwhalNode node = cluster.addReplica();
    await(() -> state(node).getJsonObject("discovery", new JsonObject()).getString("error", "").contains("forbidden (403)"),
        "the refusal in /narwhal/state");
    assertTrue(metrics(node).contains("narwhal_cluster_discovery_failing 1.0"), "the gauge is up");

    api = slices(3);
    await(() -> state(node).getJsonObject("discovery", new JsonObject()).getString("error") == null, "the look-up answers again");
    JsonObject view = state(node);
    assertEquals(3, view.getInteger("members_expected"), view.encode());
    assertEquals(1, view.getInteger("members_seen"), view.encode());
    String metrics = metrics(node);
    assertTrue(metrics.contains("narwhal_cluster_discovery_failing 0.0"), metrics);
    assertTrue(metrics.contains("narwhal_cluster_members_expected 3.0"), "NarwhalClusterMembersMissing can fire: " + metrics);
  }

  private static JsonObject state(NarwhalNode node) {
    return new JsonObject(get(node, "/narwhal/state")).getJsonObject("cluster");
  }

  private static String metrics(NarwhalNode node) {
    return get(node, "/metrics");
  }

  private static String get(NarwhalNode node, String path) {
    try {
      return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.port() + path)).build(),
          HttpResponse.BodyHandlers.ofString()).body();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private void await(BooleanSupplier condition, String what) {
    for (int i = 0; i < 1500; i++) {
      if (condition.getAsBoolean()) return;
      ClusterHarness.await(io.vertx.core.Future.<Void>future(p -> vertx.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError("never: " + what);
  }
}
