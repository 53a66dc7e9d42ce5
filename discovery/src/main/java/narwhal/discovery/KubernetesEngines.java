package narwhal.discovery;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.vertx5.Vertx5HttpClientFactory;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.DiscoveryStatus;
import narwhal.common.config.DiscoveryConfig;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.Role;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.logging.Logger;

/**
 * Engines from the Kubernetes API (docs/operations.md#engines-from-kubernetes): one informer (list, then watch) on the
 * pods each role's label selector matches, through fabric8's client on this replica's own Vert.x. Every change to the
 * pods recomputes the engine set ({@link PodEngine}) at most every {@link #SETTLE_MS}, and a set that differs is
 * handed to {@code onEngines} on the replica's context. While the API cannot be reached or refuses, the informers keep
 * retrying, the last known engines stay, and the status ({@link DiscoveryStatus}) says stale and why; a 403 names the
 * verb and resource the service account lacks.
 */
public final class KubernetesEngines implements DiscoveryStatus {
  private static final Logger LOG = Logger.getLogger(KubernetesEngines.class.getName());
  /** How long changes gather before the engine set is recomputed (a rollout's burst of pod events is one change). */
  static final long SETTLE_MS = 200;
  /** How often staleness is looked at (an informer's watch dropping says nothing by itself). */
  static final long CHECK_MS = 1_000;
  /** Engines discovery adds at most: pods beyond it (by name) are left out and said once. */
  static final int MAX_ENGINES = 4_096;

  private final Vertx vertx;
  private final Context context;
  private final DiscoveryConfig.Kubernetes cfg;
  private final Consumer<List<EngineConfig>> onEngines;
  private final KubernetesClient client;
  private final String namespace;
  private final Map<Role, SharedIndexInformer<Pod>> informers = new java.util.concurrent.ConcurrentHashMap<>();
  /** Each role's engines from its informer's last complete list: kept while a new informer lists afresh. */
  private final Map<Role, List<EngineConfig>> known = new EnumMap<>(Role.class);
  /** Roles whose watch dropped: listed afresh once the API answers, not trusted to a resumed watch. */
  private final Set<Role> dropped = java.util.EnumSet.noneOf(Role.class);
  private final ResourceEventHandler<Pod> handler = new ResourceEventHandler<>() {
    @Override
    public void onAdd(Pod pod) {
      changed();
    }

    @Override
    public void onUpdate(Pod before, Pod after) {
      changed();
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {
      changed();
    }
  };
  private final Set<String> whyNotSaid = new HashSet<>();
  private volatile List<EngineConfig> engines = List.of();
  private volatile String error;
  private volatile boolean stale = true;
  private boolean settling;
  private volatile boolean closed;
  private long checker = -1;

  private KubernetesEngines(Vertx vertx, DiscoveryConfig.Kubernetes cfg, Consumer<List<EngineConfig>> onEngines) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.cfg = cfg;
    this.onEngines = onEngines;
    Config base = Config.autoConfigure(null);
    ConfigBuilder config = new ConfigBuilder(base).withRequestTimeout(10_000).withConnectionTimeout(5_000)
        .withWatchReconnectInterval(1_000).withWatchReconnectLimit(-1)
        // the informer retries a failed list itself: a refusal is seen (and said) at once, not after the client's backoff
        .withRequestRetryBackoffLimit(0);
    if (!cfg.apiUrl().isEmpty()) config.withMasterUrl(cfg.apiUrl());
    this.namespace = !cfg.namespace().isEmpty() ? cfg.namespace()
        : base.getNamespace() == null || base.getNamespace().isEmpty() ? "default" : base.getNamespace();
    config.withNamespace(namespace);
    this.client = new KubernetesClientBuilder().withConfig(config.build()).withHttpClientFactory(new Vertx5HttpClientFactory(vertx))
        .build();
  }

  /**
   * Starts watching and publishes the status; {@code onEngines} gets the discovered engines each time the set changes,
   * on the one context all of this class's state lives on. Never waits for the API: engines arrive as the first lists come back.
   */
  public static KubernetesEngines start(Vertx vertx, DiscoveryConfig.Kubernetes cfg, Consumer<List<EngineConfig>> onEngines) {
    KubernetesEngines discovery = new KubernetesEngines(vertx, cfg, onEngines);
    DiscoveryStatus.publish(vertx, discovery);
    discovery.context.runOnContext(v -> discovery.run());
    return discovery;
  }

  private void run() {
    cfg.selectors().keySet().forEach(this::inform);
    checker = vertx.setPeriodic(CHECK_MS, t -> checkStale());
  }

  /** Lists and watches {@code role}'s pods with a new informer, replacing the one it had; on {@link #context}. */
  private void inform(Role role) {
    if (closed) return;
    String selector = cfg.selectors().get(role);
    SharedIndexInformer<Pod> informer = client.pods().inNamespace(namespace).withLabelSelector(selector).runnableInformer(0);
    informer.addEventHandler(handler);
    informer.exceptionHandler((started, err) -> {
      failed(role, selector, err);
      return true;
    });
    SharedIndexInformer<Pod> before = informers.put(role, informer);
    if (before != null) before.stop();
    informer.start().whenComplete((v, err) -> {
      if (err == null) changed();
    });
  }

  /** The engines discovered now (the last known while stale). */
  public List<EngineConfig> engines() {
    return engines;
  }

  @Override
  public boolean stale() {
    return stale;
  }

  @Override
  public JsonObject toJson() {
    return new JsonObject().put("enabled", true).put("source", "kubernetes").put("namespace", namespace)
        .put("stale", stale).put("error", error).put("engines", engines.size());
  }

  public void close() {
    closed = true;
    if (checker >= 0) vertx.cancelTimer(checker);
    informers.values().forEach(SharedIndexInformer::stop);
    client.close();
  }

  private void changed() {
    context.runOnContext(v -> {
      if (settling) return;
      settling = true;
      vertx.setTimer(SETTLE_MS, t -> {
        settling = false;
        recompute();
      });
    });
  }

  private void recompute() {
    checkStale();
    informers.forEach((role, informer) -> {
      if (informer.hasSynced()) known.put(role, enginesOf(role, informer));
    });
    Map<String, EngineConfig> found = new LinkedHashMap<>();
    known.forEach((role, engines) -> engines.forEach(engine -> {
      EngineConfig earlier = found.putIfAbsent(engine.iid(), engine);
      if (earlier != null && whyNotSaid.add(engine.iid() + ": two roles")) {
        LOG.warning(() -> "discovery: pod " + engine.iid() + " matches the selectors of " + earlier.role().wireName() + " and "
            + role.wireName() + "; it serves as " + earlier.role().wireName());
      }
    }));
    List<EngineConfig> next = List.copyOf(found.values());
    if (next.size() > MAX_ENGINES) {
      if (whyNotSaid.add("over " + MAX_ENGINES)) {
        LOG.warning(() -> "discovery: " + found.size() + " pods are engines; only the first " + MAX_ENGINES + " by role and name are used");
      }
      next = next.subList(0, MAX_ENGINES);
    }
    List<EngineConfig> applied = next;
    if (applied.equals(engines)) return;
    engines = applied;
    LOG.info(() -> "discovery: " + applied.size() + " engine(s) from Kubernetes in namespace " + namespace);
    onEngines.accept(applied);
  }

  private List<EngineConfig> enginesOf(Role role, SharedIndexInformer<Pod> informer) {
    List<Pod> pods = new ArrayList<>(informer.getStore().list());
    pods.sort((a, b) -> a.getMetadata().getName().compareTo(b.getMetadata().getName()));
    List<EngineConfig> engines = new ArrayList<>();
    for (Pod pod : pods) {
      PodEngine.Outcome outcome = PodEngine.of(pod, role, cfg);
      String name = pod.getMetadata().getName();
      if (outcome.engine() == null) {
        if (whyNotSaid.add(name + ": " + outcome.whyNot())) {
          LOG.info(() -> "discovery: pod " + name + " is not an engine now (" + outcome.whyNot() + ")");
        }
        continue;
      }
      whyNotSaid.removeIf(s -> s.startsWith(name + ": ") && !s.endsWith(": two roles"));
      engines.add(outcome.engine());
    }
    return engines;
  }

  /**
   * Stale while any informer does not watch. A role whose watch dropped is listed afresh by a new informer once the
   * API answers: what changed meanwhile is then seen even where a resumed watch would not replay it.
   */
  private void checkStale() {
    informers.forEach((role, informer) -> {
      if (!informer.hasSynced()) return;
      if (!informer.isWatching()) {
        dropped.add(role);
      } else if (dropped.remove(role)) {
        inform(role);
      }
    });
    boolean now = informers.values().stream().anyMatch(i -> !i.isWatching());
    if (stale && !now) {
      if (error != null) LOG.info(() -> "discovery: the Kubernetes API answers again; watching pods in " + namespace);
      error = null;
    }
    stale = now;
  }

  private void failed(Role role, String selector, Throwable err) {
    String why = code(err) == 403
        ? "list and watch pods in namespace " + namespace + " (selector \"" + selector + "\", " + role.wireName()
            + "): forbidden (403): the service account needs get, list and watch on pods in " + namespace
        : "list and watch pods in namespace " + namespace + " (selector \"" + selector + "\", " + role.wireName() + "): "
            + (code(err) > 0 ? "HTTP " + code(err) + ": " : "") + rootMessage(err);
    stale = true;
    if (!why.equals(error)) LOG.warning(() -> "discovery: " + why + "; the last known engines stay (said once)");
    error = why;
  }

  /** The HTTP status of the API's answer in {@code err}'s causes, or 0 when none answered. */
  private static int code(Throwable err) {
    for (Throwable t = err; t != null; t = t.getCause()) {
      if (t instanceof KubernetesClientException k && k.getCode() > 0) return k.getCode();
    }
    return 0;
  }

  private static String rootMessage(Throwable err) {
    Throwable root = err;
    while (root.getCause() != null && root.getCause() != root) root = root.getCause();
    return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
  }
}
