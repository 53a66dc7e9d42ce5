package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.config.NarwhalConfig;

import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The simulated engines a fleet with {@code sim.embedded: true} starts beside its router. The simulator is not part of
 * {@code narwhal.jar}: the tools jar ({@code tools/}) provides this through {@link ServiceLoader}, so a replica runs
 * the embedded fleet only when the tools jar is on its class path ({@code ./narwhal serve} and {@code ./narwhal demo}
 * put it there).
 */
public interface EmbeddedEngines {
  /** What started: stops every engine. */
  interface Running {
    Future<Void> close();
  }

  /** Starts one simulated engine per {@code engines[]} entry, on its URL's port, with its role and the {@code sim.*} knobs. */
  Future<Running> start(Vertx vertx, NarwhalConfig config, String engineApiKey);

  /** The provider on the class path, if any. */
  static Optional<EmbeddedEngines> installed() {
    return ServiceLoader.load(EmbeddedEngines.class, EmbeddedEngines.class.getClassLoader()).findFirst();
  }
}
