package narwhal.launcher;

import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code deploy/kubernetes} as {@code kubectl kustomize} renders it (offline): its selectors find their pods, its probes
 * and ports are the ones the fleet ConfigMap sets, the grace period covers a graceful stop, only router pods reach
 * the cluster ports, the Role grants every look-up the code makes, the pod is locked down with a writable path for
 * everything the replica writes, and the fleet ConfigMap passes the project's own validation.
 */
@SuppressWarnings("unchecked")
class DeployManifestsTest {
  private static final Map<String, String> ROUTER = Map.of("app.kubernetes.io/name", "narwhal-router");
  private static List<Map<String, Object>> objects;
  private static NarwhalConfig fleet;

  @BeforeAll
  static void render() throws Exception {
    Path root = Path.of("").toAbsolutePath();
    if (!Files.isDirectory(root.resolve("deploy"))) root = root.getParent();
    Process kubectl = new ProcessBuilder("kubectl", "kustomize", root.resolve("deploy/kubernetes").toString())
        .redirectErrorStream(true).start();
    String out = new String(kubectl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(kubectl.waitFor(60, TimeUnit.SECONDS), "kubectl kustomize finishes");
    assertEquals(0, kubectl.exitValue(), "kubectl kustomize deploy/kubernetes (.ci/run installs kubectl): " + out);
    objects = new ArrayList<>();
    for (Object doc : new Yaml(new LoaderOptions()).loadAll(out)) if (doc != null) objects.add((Map<String, Object>) doc);
    Map<String, Object> configMap = one("ConfigMap", "narwhal-fleet");
    fleet = NarwhalConfig.parse((String) map(configMap, "data").get("narwhal.json"));
  }

  private static List<Map<String, Object>> all(String kind) {
    return objects.stream().filter(o -> kind.equals(o.get("kind"))).toList();
  }

  private static Map<String, Object> one(String kind, String name) {
    return all(kind).stream().filter(o -> name.equals(map(o, "metadata").get("name"))).findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind + " " + name + " in deploy/kubernetes"));
  }

  private static Map<String, Object> map(Map<String, Object> o, String... path) {
    Map<String, Object> at = o;
    for (String key : path) {
      at = (Map<String, Object>) at.get(key);
      assertNotNull(at, "no " + String.join(".", path));
    }
    return at;
  }

  private static List<Map<String, Object>> list(Map<String, Object> o, String key) {
    Object value = o.get(key);
    return value == null ? List.of() : (List<Map<String, Object>>) value;
  }

  private static boolean selects(Map<String, Object> selector, Map<String, Object> labels) {
    return !selector.isEmpty() && selector.entrySet().stream().allMatch(e -> Objects.equals(labels.get(e.getKey()), e.getValue()));
  }

  private static Map<String, Object> routerPod() {
    return map(one("Deployment", "narwhal-router"), "spec", "template");
  }

  private static Map<String, Object> routerContainer() {
    return list(map(routerPod(), "spec"), "containers").get(0);
  }

  /** The container port a probe or Service names (by name or number). */
  private static int containerPort(Map<String, Object> container, Object port) {
    if (port instanceof Integer n) return n;
    return list(container, "ports").stream().filter(p -> port.equals(p.get("name"))).map(p -> (Integer) p.get("containerPort"))
        .findFirst().orElseThrow(() -> new AssertionError("no container port named " + port));
  }

  @Test
  void everySelectorFindsThePodsItMeans() {
    List<Map<String, Object>> podLabels = new ArrayList<>();
    for (String kind : List.of("Deployment", "StatefulSet")) {
      for (Map<String, Object> workload : all(kind)) {
        Map<String, Object> labels = map(workload, "spec", "template", "metadata", "labels");
        assertTrue(selects(map(workload, "spec", "selector", "matchLabels"), labels), kind + " selects its own pods");
        podLabels.add(labels);
      }
    }
    for (Map<String, Object> service : all("Service")) {
      Map<String, Object> selector = map(service, "spec", "selector");
      assertTrue(podLabels.stream().anyMatch(labels -> selects(selector, labels)), "Service " + map(service, "metadata").get("name")
          + " selects pods of a workload");
    }
    Map<String, Object> router = map(routerPod(), "metadata", "labels");
    assertTrue(selects(map(one("PodDisruptionBudget", "narwhal-router"), "spec", "selector", "matchLabels"), router));
    assertTrue(selects(map(one("NetworkPolicy", "narwhal-router"), "spec", "podSelector", "matchLabels"), router));
    assertTrue(router.entrySet().containsAll(ROUTER.entrySet()));
  }

  @Test
  void probesAndPortsAreTheFleetFilesAndTheGracePeriodCoversAGracefulStop() {
    Map<String, Object> container = routerContainer();
    int health = fleet.server().healthPort();
    assertTrue(health > 0, "the fleet ConfigMap sets server.health_port");
    for (String probe : List.of("startupProbe", "readinessProbe", "livenessProbe")) {
      assertEquals(health, containerPort(container, map(container, probe, "httpGet").get("port")), probe + " on the health port");
    }
    assertEquals("/ready", map(container, "readinessProbe", "httpGet").get("path"));
    Map<String, Object> client = one("Service", "narwhal");
    assertEquals(fleet.server().port(), containerPort(container, list(map(client, "spec"), "ports").get(0).get("targetPort")));
    int grace = (Integer) map(routerPod(), "spec").get("terminationGracePeriodSeconds");
    assertTrue(grace > fleet.serving().gracefulTimeoutS() + fleet.serving().drainDelayS(),
        "grace " + grace + " s covers drain_delay_s + graceful_timeout_s and leaving the cluster");
    Map<String, Object> headless = one("Service", fleet.cluster().kubernetes().serviceName());
    assertEquals("None", map(headless, "spec").get("clusterIP"), "Hazelcast's Kubernetes discovery lists a headless Service");
    Set<Integer> clusterPorts = Set.of(fleet.cluster().port(), fleet.cluster().eventBusPort());
    assertFalse(clusterPorts.contains(0), "a fixed event-bus port, for the NetworkPolicy");
    Set<Integer> published = new HashSet<>();
    for (Map<String, Object> p : list(map(headless, "spec"), "ports")) published.add(containerPort(container, p.get("targetPort")));
    assertEquals(clusterPorts, published);
  }

  @Test
  void onlyRouterPodsReachTheClusterPorts() {
    Set<Integer> clusterPorts = Set.of(fleet.cluster().port(), fleet.cluster().eventBusPort());
    Set<Integer> guarded = new HashSet<>();
    Set<Integer> open = new HashSet<>();
    for (Map<String, Object> rule : list(map(one("NetworkPolicy", "narwhal-router"), "spec"), "ingress")) {
      List<Map<String, Object>> from = list(rule, "from");
      boolean onlyRouters = !from.isEmpty() && from.stream().allMatch(peer -> peer.keySet().equals(Set.of("podSelector"))
          && ROUTER.equals(map(peer, "podSelector", "matchLabels")));
      for (Map<String, Object> port : list(rule, "ports")) (onlyRouters ? guarded : open).add((Integer) port.get("port"));
    }
    assertTrue(guarded.containsAll(clusterPorts), "cluster ports admitted from router pods: " + guarded);
    assertTrue(open.stream().noneMatch(clusterPorts::contains), "no rule opens a cluster port to others: " + open);
    assertTrue(open.containsAll(Set.of(fleet.server().port(), fleet.server().healthPort())), "clients and probes get in: " + open);
  }

  @Test
  void theRoleGrantsEveryLookUpTheReplicasMake() {
    String account = (String) map(routerPod(), "spec").get("serviceAccountName");
    Map<String, Object> binding = one("RoleBinding", "narwhal-router");
    assertTrue(list(binding, "subjects").stream().anyMatch(s -> account.equals(s.get("name"))), "the pods' account is bound");
    Map<String, Object> role = one("Role", (String) map(binding, "roleRef").get("name"));
    // PeerLookup and Hazelcast: list endpointslices, get endpoints (an older API server)
    for (String[] need : List.of(new String[] {"discovery.k8s.io", "endpointslices", "list"}, new String[] {"", "endpoints", "get"},
        new String[] {"", "endpoints", "list"},
        // engine discovery: an informer lists and watches pods
        new String[] {"", "pods", "list"}, new String[] {"", "pods", "watch"})) {
      assertTrue(list(role, "rules").stream().anyMatch(rule -> ((List<String>) rule.get("apiGroups")).contains(need[0])
              && ((List<String>) rule.get("resources")).contains(need[1]) && ((List<String>) rule.get("verbs")).contains(need[2])),
          "the Role allows " + need[2] + " " + need[1] + " (" + need[0] + ")");
    }
  }

  @Test
  void engineDiscoveryFindsTheExampleEnginesByTheirLabelsPortsAndModel() {
    var discovery = fleet.discovery().kubernetes();
    assertTrue(discovery.enabled(), "the example fleet discovers its engines");
    Map<String, String> roles = Map.of("vllm-prefill", discovery.prefillSelector(), "vllm-decode", discovery.decodeSelector());
    roles.forEach((workload, selector) -> {
      Map<String, Object> template = map(one("StatefulSet", workload), "spec", "template");
      Map<String, Object> labels = map(template, "metadata", "labels");
      for (String term : selector.split(",")) {
        String[] kv = term.split("=", 2);
        assertEquals(kv[1], String.valueOf(labels.get(kv[0])), workload + "'s pods carry " + term + " (" + selector + ")");
      }
      Map<String, Object> container = list(map(template, "spec"), "containers").get(0);
      Set<Object> ports = list(container, "ports").stream().map(port -> port.get("name")).collect(java.util.stream.Collectors.toSet());
      assertTrue(ports.containsAll(Set.of(discovery.port(), discovery.kvSideChannelPort())), workload + " names its ports: " + ports);
      assertEquals(fleet.model(), map(template, "metadata", "annotations").get(discovery.modelLabel()), workload + "'s model");
    });
  }

  @Test
  void thePodIsLockedDownAndEverythingItWritesHasAWritablePath() {
    Map<String, Object> spec = map(routerPod(), "spec");
    assertEquals(false, spec.get("enableServiceLinks"));
    assertEquals(true, map(spec, "securityContext").get("runAsNonRoot"));
    Map<String, Object> container = routerContainer();
    assertEquals(true, map(container, "securityContext").get("readOnlyRootFilesystem"));
    assertEquals(false, map(container, "securityContext").get("allowPrivilegeEscalation"));
    String jvm = list(container, "env").stream().filter(e -> "JAVA_TOOL_OPTIONS".equals(e.get("name"))).map(e -> (String) e.get("value"))
        .findFirst().orElse("");
    assertTrue(jvm.contains("-XX:MaxRAMPercentage="), "the heap follows the memory limit: " + jvm);
    assertTrue(map(container, "resources", "limits").containsKey("memory"));
    Set<String> emptyDirs = new HashSet<>();
    Set<String> secrets = new HashSet<>();
    for (Map<String, Object> volume : list(spec, "volumes")) {
      if (volume.containsKey("emptyDir")) emptyDirs.add((String) volume.get("name"));
      if (volume.containsKey("secret")) secrets.add((String) volume.get("name"));
    }
    List<Map<String, Object>> mounts = list(container, "volumeMounts");
    java.util.function.Predicate<String> writable = path -> mounts.stream().anyMatch(m -> emptyDirs.contains((String) m.get("name"))
        && path.startsWith(m.get("mountPath") + "/"));
    java.util.function.Predicate<String> secret = path -> mounts.stream().anyMatch(m -> secrets.contains((String) m.get("name"))
        && path.startsWith(m.get("mountPath") + "/"));
    String tmp = jvm.replaceAll(".*-Djava.io.tmpdir=(\\S+).*", "$1");
    assertTrue(writable.test(tmp + "/"), "java.io.tmpdir (the JVM, Vert.x's file cache, Netty's native library) is writable: " + tmp);
    assertTrue(writable.test(fleet.journal().path()), "journal.path is writable: " + fleet.journal().path());
    for (String file : List.of(fleet.server().apiKeyFile(), fleet.admin().tokenFile(), fleet.engine().engineApiKeyFile(),
        fleet.cluster().secretFile())) {
      assertTrue(secret.test(file), file + " is in the mounted Secret");
    }
    String configMapName = (String) map(one("ConfigMap", "narwhal-fleet"), "metadata").get("name");
    assertEquals("narwhal-fleet", configMapName, "one name for every version of the fleet file: kubelet swaps it in place, the replicas hot-reload it");
  }

  @Test
  void theImageCarriesTheProductionJarOnlyAndRunsAsNonRoot() throws IOException {
    Path root = Path.of("").toAbsolutePath();
    if (!Files.isDirectory(root.resolve("deploy"))) root = root.getParent();
    List<String> lines = Files.readAllLines(root.resolve("deploy/kubernetes/Dockerfile"));
    List<String> copies = lines.stream().filter(l -> l.startsWith("COPY")).toList();
    assertTrue(copies.stream().anyMatch(l -> l.contains("launcher/target/narwhal.jar")), copies.toString());
    assertTrue(copies.stream().noneMatch(l -> l.contains("narwhal-tools.jar")), "no simulator or benchmarks in the image: " + copies);
    assertTrue(lines.stream().anyMatch(l -> l.matches("USER [1-9][0-9]*")), "a numeric non-root USER (runAsNonRoot can check it)");
  }
}
