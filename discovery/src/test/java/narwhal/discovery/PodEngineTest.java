package narwhal.discovery;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.DiscoveryConfig;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.Role;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a pod the API hands over is as an engine, including what an odd or hostile API could send. */
class PodEngineTest {
  private static final DiscoveryConfig.Kubernetes CFG = NarwhalConfig.parse(new JsonObject().put("model", "m")
      .put("discovery", new JsonObject().put("kubernetes", new JsonObject().put("enabled", true).put("decode_selector", "app=vllm")
          .put("port", "http").put("kv_side_channel_port", "nixl").put("model_label", "narwhal.io/model"))).encode())
      .discovery().kubernetes();

  private static PodBuilder pod(String ip, int port) {
    return new PodBuilder().withNewMetadata().withName("vllm-decode-0").addToLabels("narwhal.io/model", "from-label").endMetadata()
        .withNewSpec().addNewContainer().withName("vllm").addNewPort().withName("http").withContainerPort(port).endPort()
        .addNewPort().withName("nixl").withContainerPort(5600).endPort().endContainer().endSpec()
        .withNewStatus().withPhase("Running").withPodIP(ip).addNewCondition().withType("Ready").withStatus("True").endCondition()
        .endStatus();
  }

  private static String whyNot(Pod pod) {
    PodEngine.Outcome outcome = PodEngine.of(pod, Role.DECODE, CFG);
    assertNull(outcome.engine(), String.valueOf(outcome.engine()));
    return outcome.whyNot();
  }

  @Test
  void aReadyPodIsAnEngineAtItsIpAndNamedPorts() {
    EngineConfig engine = PodEngine.of(pod("10.1.2.3", 8000).build(), Role.DECODE, CFG).engine();
    assertEquals(new EngineConfig("vllm-decode-0", "http://10.1.2.3:8000", Role.DECODE, "", "10.1.2.3:5600", "from-label"), engine);
    EngineConfig v6 = PodEngine.of(pod("fd00::12", 8000).editMetadata().addToAnnotations("narwhal.io/model", "Qwen/Qwen3-0.6B")
        .endMetadata().build(), Role.DECODE, CFG).engine();
    assertEquals("http://[fd00::12]:8000", v6.url());
    assertEquals("[fd00::12]:5600", v6.kvSideChannel());
    assertEquals("Qwen/Qwen3-0.6B", v6.model(), "the annotation wins over the label");
  }

  @Test
  void aPodThatCannotServeIsNoEngineAndSaysWhy() {
    assertEquals("not ready", whyNot(pod("10.1.2.3", 8000).editStatus().editFirstCondition().withStatus("False").endCondition()
        .endStatus().build()));
    assertEquals("terminating", whyNot(pod("10.1.2.3", 8000).editMetadata().withDeletionTimestamp("2026-12-05T00:00:00Z")
        .endMetadata().build()));
    assertEquals("not running", whyNot(pod("10.1.2.3", 8000).editStatus().withPhase("Pending").endStatus().build()));
    assertEquals("no pod IP yet", whyNot(pod("", 8000).build()));
  }

  @Test
  void whatAnOddApiSendsIsBounded() {
    assertTrue(whyNot(pod("evil.example/x?", 8000).build()).contains("is not an IP address"));
    assertTrue(whyNot(pod("10.1.2.3", 0).build()).contains("discovery.kubernetes.port"));
    assertTrue(whyNot(pod("10.1.2.3", 70_000).build()).contains("discovery.kubernetes.port"));
    assertTrue(whyNot(pod("10.1.2.3", 8000).editMetadata().addToAnnotations("narwhal.io/model", "m".repeat(300)).endMetadata()
        .build()).contains("longer than"));
    Pod noNamedPort = pod("10.1.2.3", 8000).editSpec().editFirstContainer().withPorts().endContainer().endSpec().build();
    assertTrue(whyNot(noNamedPort).contains("no container port \"http\""));
  }
}
