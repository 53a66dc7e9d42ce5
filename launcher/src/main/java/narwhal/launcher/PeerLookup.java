package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import narwhal.common.config.ClusterConfig;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * The look-up Hazelcast's Kubernetes discovery makes, made again by the replica itself so that its outcome is seen
 * (docs/operations.md#running-on-kubernetes): the ready endpoints of {@code cluster.kubernetes.service_name} from the
 * Kubernetes API (EndpointSlices, else Endpoints, as Hazelcast reads them), every {@value #PERIOD_MS} ms. Hazelcast
 * answers a refused look-up by running alone after its retries; here the refusal is logged once per spell naming the
 * verb, resource and namespace (403: the RBAC rule that is missing), shown in {@code /narwhal/state} and counted in
 * {@code narwhal_cluster_discovery_failing}; the ready endpoints are how many members the cluster should have.
 */
final class PeerLookup {
  static final long PERIOD_MS = 10_000;
  static final Path ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
  private static final Logger LOG = Logger.getLogger(PeerLookup.class.getName());

  /** The outcome of the last look-up: the ready endpoints of the last that succeeded, and the error of one that failed. */
  record Outcome(int readyEndpoints, String error, long checkedMs) {
    JsonObject toJson() {
      JsonObject json = new JsonObject().put("source", "kubernetes").put("ready_endpoints", readyEndpoints)
          .put("checked_ms", checkedMs);
      if (error != null) json.put("error", error);
      return json;
    }
  }

  private final Vertx vertx;
  private final WebClient web;
  private final String base;
  private final String namespace;
  private final String service;
  private final Path account;
  private volatile Outcome outcome = new Outcome(0, "not looked up yet", 0);
  private String reported;

  private PeerLookup(Vertx vertx, ClusterConfig.Kubernetes k8s, UnaryOperator<String> env, Path account) {
    this.vertx = vertx;
    this.account = account;
    this.service = k8s.serviceName();
    this.base = apiUrl(k8s, env);
    this.namespace = !k8s.namespace().isEmpty() ? k8s.namespace() : read(account.resolve("namespace"), "default");
    WebClientOptions options = new WebClientOptions().setUserAgent("narwhal-peer-lookup").setConnectTimeout(3_000)
        .setIdleTimeout(30).setFollowRedirects(false);
    if (base.startsWith("https:")) {
      options.setSsl(true);
      // the pod's CA when it has one (in-cluster), else the JVM's trust store (an api_url with a public certificate)
      Path ca = account.resolve("ca.crt");
      if (Files.isReadable(ca)) options.setTrustOptions(new PemTrustOptions().addCertPath(ca.toString()));
    }
    this.web = WebClient.create(vertx, options);
  }

  /** Looks up now, then every {@link #PERIOD_MS}. */
  static PeerLookup start(Vertx vertx, ClusterConfig.Kubernetes k8s, UnaryOperator<String> env, Path account) {
    PeerLookup lookup = new PeerLookup(vertx, k8s, env, account);
    lookup.lookUp();
    vertx.setPeriodic(PERIOD_MS, t -> lookup.lookUp());
    return lookup;
  }

  Outcome outcome() {
    return outcome;
  }

  /** {@code cluster.kubernetes.api_url}, else the in-cluster address Kubernetes puts in every pod's environment. */
  static String apiUrl(ClusterConfig.Kubernetes k8s, UnaryOperator<String> env) {
    if (!k8s.apiUrl().isEmpty()) return k8s.apiUrl().replaceAll("/$", "");
    String host = env.apply("KUBERNETES_SERVICE_HOST");
    String port = env.apply("KUBERNETES_SERVICE_PORT");
    if (host == null || host.isBlank()) return "https://kubernetes.default.svc";
    return "https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + (port == null || port.isBlank() ? "443" : port);
  }

  Future<Outcome> lookUp() {
    String slices = "/apis/discovery.k8s.io/v1/namespaces/" + namespace + "/endpointslices?labelSelector=kubernetes.io/service-name%3D" + service;
    return get(slices).compose(resp -> {
          if (resp.statusCode() == 404) {
            return get("/api/v1/namespaces/" + namespace + "/endpoints/" + service)
                .map(old -> answer(old, "get endpoints \"" + service + "\"", PeerLookup::readyInEndpoints));
          }
          return Future.succeededFuture(answer(resp, "list endpointslices (discovery.k8s.io)", PeerLookup::readyInSlices));
        })
        .recover(err -> Future.succeededFuture(failed("cannot reach the Kubernetes API at " + base + ": " + describe(err))))
        .onSuccess(this::record);
  }

  private Future<HttpResponse<Buffer>> get(String path) {
    URI uri = URI.create(base + path);
    int port = uri.getPort() > 0 ? uri.getPort() : ("https".equals(uri.getScheme()) ? 443 : 80);
    HttpRequest<Buffer> request = web.get(port, uri.getHost(), uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery()))
        .timeout(5_000);
    // read at each look-up: a projected service account token is rotated by kubelet
    return vertx.fileSystem().readFile(account.resolve("token").toString()).map(b -> b.toString().strip()).otherwise("")
        .compose(token -> {
          if (!token.isEmpty()) request.bearerTokenAuthentication(token);
          return request.send();
        });
  }

  private Outcome answer(HttpResponse<Buffer> resp, String verb, java.util.function.ToIntFunction<JsonObject> ready) {
    int status = resp.statusCode();
    String where = verb + " in namespace " + namespace;
    if (status == 403) {
      return failed(where + ": forbidden (403): the router pods' service account needs get/list/watch on endpointslices "
          + "(discovery.k8s.io) and endpoints in " + namespace + "; until then this replica runs as a cluster of its own");
    }
    if (status == 401) return failed(where + ": unauthorized (401): the service account token is missing or refused");
    if (status != 200) return failed(where + ": the Kubernetes API answered " + status);
    try {
      return new Outcome(ready.applyAsInt(resp.bodyAsJsonObject()), null, System.currentTimeMillis());
    } catch (RuntimeException e) {
      return failed(where + ": an answer that is not an endpoint list (" + e.getMessage() + ")");
    }
  }

  private Outcome failed(String why) {
    return new Outcome(outcome.readyEndpoints(), why, System.currentTimeMillis());
  }

  private void record(Outcome next) {
    outcome = next;
    if (next.error() != null && !next.error().equals(reported)) {
      LOG.severe("cluster: Kubernetes discovery of service " + service + " failed: " + next.error());
    } else if (next.error() == null && reported != null) {
      LOG.info("cluster: Kubernetes discovery of service " + service + " answers again: " + next.readyEndpoints() + " ready endpoint(s)");
    }
    reported = next.error();
  }

  static int readyInSlices(JsonObject list) {
    int ready = 0;
    for (Object item : list.getJsonArray("items", new JsonArray())) {
      for (Object endpoint : ((JsonObject) item).getJsonArray("endpoints", new JsonArray())) {
        JsonObject conditions = ((JsonObject) endpoint).getJsonObject("conditions", new JsonObject());
        if (!Boolean.FALSE.equals(conditions.getBoolean("ready"))) ready++;
      }
    }
    return ready;
  }

  static int readyInEndpoints(JsonObject endpoints) {
    int ready = 0;
    for (Object subset : endpoints.getJsonArray("subsets", new JsonArray())) {
      ready += ((JsonObject) subset).getJsonArray("addresses", new JsonArray()).size();
    }
    return ready;
  }

  private static String describe(Throwable err) {
    if (err instanceof java.net.UnknownHostException) return "the name does not resolve (" + err.getMessage() + ")";
    return err.getMessage() == null ? err.getClass().getSimpleName() : err.getMessage();
  }

  private static String read(Path file, String otherwise) {
    try {
      return Files.isReadable(file) ? Files.readString(file).strip() : otherwise;
    } catch (Exception e) {
      return otherwise;
    }
  }

  void close() {
    web.close();
  }
}
