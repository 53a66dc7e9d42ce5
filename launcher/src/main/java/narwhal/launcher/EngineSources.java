package narwhal.launcher;

import io.vertx.core.Vertx;
import narwhal.common.config.DiscoveryConfig;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.FleetFileWatcher;
import narwhal.common.config.NarwhalConfig;
import narwhal.discovery.KubernetesEngines;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Logger;

/**
 * The engines a replica routes to: the fleet file's and the discovered ones together (docs/configuration.md
 * {@code discovery}). A discovered set that changed is applied through the fleet file's own path
 * ({@link FleetFileWatcher#recombine}): re-pointed engines are staged, added ones checked, removed ones drained,
 * and the drift digest covers them all. An iid in the file wins over a discovered pod of the same name.
 */
final class EngineSources {
  private static final Logger LOG = Logger.getLogger(EngineSources.class.getName());

  private final FleetFileWatcher watcher;
  private final Set<String> collisionsSaid = new HashSet<>();
  private volatile List<EngineConfig> discovered = List.of();
  private KubernetesEngines kubernetes;

  private EngineSources(FleetFileWatcher watcher) {
    this.watcher = watcher;
  }

  static EngineSources start(Vertx vertx, DiscoveryConfig discovery, FleetFileWatcher watcher) {
    EngineSources sources = new EngineSources(watcher);
    watcher.combining(sources::combine);
    sources.kubernetes = KubernetesEngines.start(vertx, discovery.kubernetes(), engines -> {
      sources.discovered = engines;
      watcher.recombine();
    });
    return sources;
  }

  /** {@code file} with the discovered engines after its own. */
  private NarwhalConfig combine(NarwhalConfig file) {
    List<EngineConfig> found = discovered;
    if (found.isEmpty()) return file;
    Set<String> declared = new HashSet<>();
    file.engines().forEach(e -> declared.add(e.iid()));
    List<EngineConfig> all = new ArrayList<>(file.engines());
    for (EngineConfig engine : found) {
      if (!declared.contains(engine.iid())) {
        all.add(engine);
      } else if (collisionsSaid.add(engine.iid())) {
        LOG.warning(() -> "discovery: pod " + engine.iid() + " has the iid of an engine of the fleet file; the file's entry wins");
      }
    }
    return file.withEngines(all);
  }

  void close() {
    if (kubernetes != null) kubernetes.close();
  }
}
