package narwhal.discovery;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import narwhal.common.config.DiscoveryConfig;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.Role;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a pod is as an engine: one of {@code role} while it is running, ready, not terminating and has an IP (iid = its
 * name, url = {@code http://<pod IP>:<port>}); otherwise none — an engine that stops being ready or starts terminating
 * leaves the set, so it gets no new legs and finishes those it has.
 */
final class PodEngine {
  private static final String IPV4 = "(\\d{1,3}\\.){3}\\d{1,3}";
  private static final String IPV6 = "[0-9A-Fa-f:.]{2,45}";
  /** Longer than any served model name; what a pod's annotation may say is bounded, as all a peer sends. */
  static final int MAX_MODEL_CHARS = 256;

  private PodEngine() {
  }

  /** The engine {@code pod} is, or why it is none (the reason, for the replica's log). */
  record Outcome(EngineConfig engine, String whyNot) {
  }

  static Outcome of(Pod pod, Role role, DiscoveryConfig.Kubernetes cfg) {
    String name = pod.getMetadata().getName();
    if (pod.getMetadata().getDeletionTimestamp() != null) return none("terminating");
    if (pod.getStatus() == null || !"Running".equals(pod.getStatus().getPhase())) return none("not running");
    String ip = pod.getStatus().getPodIP();
    if (ip == null || ip.isEmpty()) return none("no pod IP yet");
    if (!ip.matches(IPV4) && !ip.matches(IPV6)) return none("pod IP \"" + clip(ip) + "\" is not an IP address");
    if (!ready(pod)) return none("not ready");
    Optional<Integer> port = port(pod, cfg.port()).filter(PodEngine::validPort);
    if (port.isEmpty()) {
      return none("no container port \"" + cfg.port() + "\" (discovery.kubernetes.port) from 1 to 65535");
    }
    String host = ip.contains(":") ? "[" + ip + "]" : ip;
    String sideChannel = "";
    if (!cfg.kvSideChannelPort().isEmpty()) {
      Optional<Integer> side = port(pod, cfg.kvSideChannelPort()).filter(PodEngine::validPort);
      if (side.isEmpty()) {
        return none("no container port named \"" + cfg.kvSideChannelPort() + "\" (discovery.kubernetes.kv_side_channel_port)");
      }
      sideChannel = host + ":" + side.get();
    }
    String model = model(pod, cfg.modelLabel());
    if (model.length() > MAX_MODEL_CHARS) return none("its model annotation is longer than " + MAX_MODEL_CHARS + " characters");
    return new Outcome(new EngineConfig(name, "http://" + host + ":" + port.get(), role, "", sideChannel, model.strip()), null);
  }

  private static boolean validPort(int port) {
    return port >= 1 && port <= 65535;
  }

  private static String clip(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "…";
  }

  private static Outcome none(String why) {
    return new Outcome(null, why);
  }

  private static boolean ready(Pod pod) {
    if (pod.getStatus().getConditions() == null) return false;
    for (PodCondition c : pod.getStatus().getConditions()) {
      if ("Ready".equals(c.getType())) return "True".equals(c.getStatus());
    }
    return false;
  }

  /** A number is the port itself; a name is looked up among the containers' ports. */
  static Optional<Integer> port(Pod pod, String port) {
    if (port.chars().allMatch(Character::isDigit)) return Optional.of(Integer.parseInt(port));
    if (pod.getSpec() == null || pod.getSpec().getContainers() == null) return Optional.empty();
    for (Container container : pod.getSpec().getContainers()) {
      if (container.getPorts() == null) continue;
      for (ContainerPort p : container.getPorts()) {
        if (port.equals(p.getName()) && p.getContainerPort() != null) return Optional.of(p.getContainerPort());
      }
    }
    return Optional.empty();
  }

  /** The model from the annotation, else the label, named {@code key}; "" (the fleet's model) when none. */
  private static String model(Pod pod, String key) {
    if (key.isEmpty()) return "";
    String annotated = value(pod.getMetadata().getAnnotations(), key);
    return annotated.isBlank() ? value(pod.getMetadata().getLabels(), key) : annotated;
  }

  private static String value(Map<String, String> map, String key) {
    return map == null ? "" : Objects.requireNonNullElse(map.get(key), "");
  }
}
