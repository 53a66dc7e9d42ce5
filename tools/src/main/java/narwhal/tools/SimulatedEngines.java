package narwhal.tools;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.launcher.EmbeddedEngines;
import narwhal.sim.SimEngine;

import java.util.ArrayList;
import java.util.List;

/** The embedded fleet of {@code sim.embedded: true}: engine-sim engines in the router's own Vert.x, one per {@code engines[]} entry. */
public final class SimulatedEngines implements EmbeddedEngines {
  @Override
  public Future<Running> start(Vertx vertx, NarwhalConfig config, String engineApiKey) {
    List<SimEngine> started = new ArrayList<>();
    Running running = () -> {
      Future<Void> chain = Future.succeededFuture();
      for (SimEngine sim : started) chain = chain.compose(v -> sim.close());
      return chain;
    };
    Future<Void> chain = Future.succeededFuture();
    for (EngineConfig engine : config.engines()) {
      chain = chain.compose(v -> SimEngine.start(vertx, EmbeddedSim.options(config, engine).setApiKey(engineApiKey))
          .map(sim -> {
            started.add(sim);
            return null;
          }));
    }
    // an engine that cannot start stops those that did
    return chain.map(v -> running).recover(err -> running.close().transform(x -> Future.failedFuture(err)));
  }
}
