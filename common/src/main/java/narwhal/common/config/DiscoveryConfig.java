package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.Objects;

/**
 * Where engines come from besides the fleet file's {@code engines} ({@code discovery}, docs/configuration.md): today
 * the Kubernetes API ({@link Kubernetes}). Engines from both sources combine; a replica with discovery on may start
 * with no engine in its file.
 */
public record DiscoveryConfig(Kubernetes kubernetes) {

  static final Key<DiscoveryConfig, Kubernetes> KUBERNETES = Key.section("kubernetes", DiscoveryConfig::kubernetes,
      Kubernetes.SECTION, Kubernetes::read);
  static final Section<DiscoveryConfig> SECTION = new Section<>(KUBERNETES);

  public DiscoveryConfig {
    Objects.requireNonNull(kubernetes, "kubernetes");
  }

  public static DiscoveryConfig defaults() {
    return read(SectionReader.empty("discovery", SECTION));
  }

  static DiscoveryConfig read(SectionReader r) {
    return new DiscoveryConfig(r.get(KUBERNETES));
  }

  /** True when some source besides the file adds engines. */
  public boolean enabled() {
    return kubernetes.enabled();
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }

  /**
   * Engines from the Kubernetes API ({@code discovery.kubernetes}): the pods in {@code namespace} ("" = the replica's
   * own) that a role's label selector matches become engines of that role while they run, are ready and have an IP:
   * iid = the pod's name, url = {@code http://<pod IP>:<port>} ({@code port}: a container port's name or number), the
   * model from the pod's annotation or label {@code model_label} ("" or absent: the top-level {@code model}), the NIXL
   * side channel from {@code kv_side_channel_port} ("": not pinned). {@code api_url} "" is the in-cluster API.
   */
  public record Kubernetes(boolean enabled, String namespace, String apiUrl, String prefillSelector,
                           String decodeSelector, String bothSelector, String port, String modelLabel,
                           String kvSideChannelPort) {

    private static final String DNS_LABEL = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
    /** What a label selector may hold: {@code app=vllm,role in (decode),!canary}. */
    private static final String SELECTOR = "[A-Za-z0-9._/\\-=!,() ]{1,1024}";
    private static final String SELECTOR_EXPECTATION = "\"\" or a Kubernetes label selector (e.g. \"app=vllm,narwhal/role=decode\")";
    private static final String PORT_EXPECTATION = "a container port's name (1-15 of a-z, 0-9, -) or number (1-65535)";

    static final Key<Kubernetes, Boolean> ENABLED = Key.bool("enabled", Kubernetes::enabled, false).readAtStart();
    static final Key<Kubernetes, String> NAMESPACE = Key.text("namespace", Kubernetes::namespace, "",
        ns -> ns.isEmpty() || ns.matches(DNS_LABEL), "\"\" (the pod's own namespace) or a Kubernetes namespace name").readAtStart();
    static final Key<Kubernetes, String> API_URL = Key.text("api_url", Kubernetes::apiUrl, "",
        url -> url.isEmpty() || url.matches("https?://[^/\\s]+/?"), "\"\" (in-cluster) or http(s)://host[:port]").readAtStart();
    static final Key<Kubernetes, String> PREFILL_SELECTOR = Key.text("prefill_selector", Kubernetes::prefillSelector, "",
        s -> s.isEmpty() || s.matches(SELECTOR), SELECTOR_EXPECTATION).readAtStart();
    static final Key<Kubernetes, String> DECODE_SELECTOR = Key.text("decode_selector", Kubernetes::decodeSelector, "",
        s -> s.isEmpty() || s.matches(SELECTOR), SELECTOR_EXPECTATION).readAtStart();
    static final Key<Kubernetes, String> BOTH_SELECTOR = Key.text("both_selector", Kubernetes::bothSelector, "",
        s -> s.isEmpty() || s.matches(SELECTOR), SELECTOR_EXPECTATION).readAtStart();
    static final Key<Kubernetes, String> PORT = Key.text("port", Kubernetes::port, "8000", Kubernetes::isPort,
        PORT_EXPECTATION).readAtStart();
    static final Key<Kubernetes, String> MODEL_LABEL = Key.text("model_label", Kubernetes::modelLabel, "",
        s -> s.isEmpty() || s.matches("([a-z0-9.-]{1,253}/)?[A-Za-z0-9._-]{1,63}"),
        "\"\" or a Kubernetes annotation or label key").readAtStart();
    static final Key<Kubernetes, String> KV_SIDE_CHANNEL_PORT = Key.text("kv_side_channel_port",
        Kubernetes::kvSideChannelPort, "", s -> s.isEmpty() || isPort(s), "\"\" or " + PORT_EXPECTATION).readAtStart();
    static final Section<Kubernetes> SECTION = new Section<>(ENABLED, NAMESPACE, API_URL, PREFILL_SELECTOR,
        DECODE_SELECTOR, BOTH_SELECTOR, PORT, MODEL_LABEL, KV_SIDE_CHANNEL_PORT);

    public Kubernetes {
      Objects.requireNonNull(namespace, "namespace");
      Objects.requireNonNull(apiUrl, "apiUrl");
      Objects.requireNonNull(port, "port");
    }

    static Kubernetes read(SectionReader r) {
      Kubernetes k = new Kubernetes(r.get(ENABLED), r.get(NAMESPACE), r.get(API_URL), r.get(PREFILL_SELECTOR),
          r.get(DECODE_SELECTOR), r.get(BOTH_SELECTOR), r.get(PORT), r.get(MODEL_LABEL), r.get(KV_SIDE_CHANNEL_PORT));
      if (k.enabled && k.prefillSelector.isEmpty() && k.decodeSelector.isEmpty() && k.bothSelector.isEmpty()) {
        throw r.invalid(PREFILL_SELECTOR.name(), "a label selector for at least one of prefill_selector, decode_selector, "
            + "both_selector (discovery.kubernetes.enabled is true)");
      }
      return k;
    }

    /** The selector of each role, those set only. */
    public java.util.Map<Role, String> selectors() {
      java.util.Map<Role, String> out = new java.util.EnumMap<>(Role.class);
      if (!prefillSelector.isEmpty()) out.put(Role.PREFILL, prefillSelector);
      if (!decodeSelector.isEmpty()) out.put(Role.DECODE, decodeSelector);
      if (!bothSelector.isEmpty()) out.put(Role.BOTH, bothSelector);
      return out;
    }

    static boolean isPort(String s) {
      if (s.matches("[0-9]{1,5}")) {
        int n = Integer.parseInt(s);
        return n >= 1 && n <= 65535;
      }
      return s.matches("[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?") && s.matches(".*[a-z].*");
    }

    public JsonObject toJson() {
      return SECTION.toJson(this);
    }
  }
}
