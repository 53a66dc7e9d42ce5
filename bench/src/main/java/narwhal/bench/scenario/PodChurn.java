package narwhal.bench.scenario;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.vertx.core.json.JsonObject;

import java.net.InetAddress;
import java.util.HashMap;

/**
 * The engines' pods for engine-churn's discovery phase: fabric8's Kubernetes API stand-in (CRUD mode: lists and
 * watches as the API server answers them) on loopback, and the pod changes a StatefulSet's rollout and scaling make —
 * a ready pod per engine (its container port {@code http} the simulated engine's), terminating, deleted, recreated.
 */
final class PodChurn implements AutoCloseable {
  static final String NAMESPACE = "bench";
  /** The stand-in logs every request it answers at INFO: held here so the level set stays. */
  private static final java.util.logging.Logger API_LOG = java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

  private final KubernetesMockServer api;
  private final KubernetesClient client;

  PodChurn() {
    API_LOG.setLevel(java.util.logging.Level.WARNING);
    api = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
    api.init(InetAddress.getLoopbackAddress(), 0);
    client = api.createClient();
  }

  /** The fleet file's {@code discovery} section that finds these pods. */
  JsonObject discovery() {
    return new JsonObject().put("kubernetes", new JsonObject().put("enabled", true)
        .put("api_url", "http://127.0.0.1:" + api.getPort()).put("namespace", NAMESPACE)
        .put("prefill_selector", "app=vllm,narwhal.io/role=prefill").put("decode_selector", "app=vllm,narwhal.io/role=decode")
        .put("port", "http"));
  }

  /** A pod for the engine at {@code port}: created, running and ready. */
  void ready(String name, String role, int port) {
    client.pods().inNamespace(NAMESPACE).resource(new PodBuilder().withNewMetadata().withName(name).withNamespace(NAMESPACE)
        .addToLabels("app", "vllm").addToLabels("narwhal.io/role", role).endMetadata()
        .withNewSpec().addNewContainer().withName("vllm").withImage("vllm/vllm-openai").addNewPort().withName("http")
        .withContainerPort(port).endPort().endContainer().endSpec()
        .withNewStatus().withPhase("Running").withPodIP("127.0.0.1").addNewCondition().withType("Ready").withStatus("True")
        .endCondition().endStatus().build()).create();
  }

  /** The pod starts terminating (its deletion timestamp set), as when Kubernetes sends its container SIGTERM. */
  void terminating(String name) {
    Pod pod = client.pods().inNamespace(NAMESPACE).withName(name).get();
    client.pods().inNamespace(NAMESPACE).resource(new PodBuilder(pod).editMetadata()
        .withDeletionTimestamp(java.time.Instant.now().toString()).endMetadata().build()).update();
  }

  /** The pod is gone (its container stopped). */
  void deleted(String name) {
    client.pods().inNamespace(NAMESPACE).withName(name).delete();
  }

  @Override
  public void close() {
    client.close();
    api.destroy();
  }
}
