package narwhal.bench.process;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonObject;
import narwhal.bench.load.LoadGenerator;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import narwhal.sim.SimFleet;

import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The simulated fleet of a scenario, on its own Vert.x instance inside the bench process, and the fleet file a
 * router replica gets for it (generated: engines with their real ports, loopback, a journal in scratch space).
 */
public final class SimBench implements EngineFleet {
  public static final String MODEL = SimEngineOptions.DEFAULT_MODEL;
  /** KV blocks per engine: far more than any scenario needs, so capacity never refuses a request. */
  public static final int BLOCKS = 1 << 21;

  private final Vertx vertx;
  private final SimFleet fleet;

  private SimBench(Vertx vertx, SimFleet fleet) {
    this.vertx = vertx;
    this.fleet = fleet;
  }

  public static SimBench start(List<SimEngineOptions> engines) {
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
    try {
      return new SimBench(vertx, LoadGenerator.join(SimFleet.start(vertx, engines), 30));
    } catch (RuntimeException e) {
      LoadGenerator.join(vertx.close(), 30);
      throw e;
    }
  }

  /** Two producers (P0, P1) and two consumers (D0, D1), each {@link #engine} shaped by {@code shape}. */
  public static List<SimEngineOptions> twoPairs(UnaryOperator<SimEngineOptions> shape) {
    return List.of(shape.apply(engine("P0", "prefill")), shape.apply(engine("P1", "prefill")),
        shape.apply(engine("D0", "decode")), shape.apply(engine("D1", "decode")));
  }

  /**
   * A zero-latency engine of this name and role with room for any load: no batch limit either, so that thousands
   * of open streams all run. A scenario shapes it further with the options' setters (latency profile, prefix
   * cache, batch limits); {@link SimProcess} passes them on to its own JVM as JSON.
   */
  public static SimEngineOptions engine(String name, String role) {
    return new SimEngineOptions().setName(name).setRole(role).setPort(0).setSideChannelPort(0).setTotalBlocks(BLOCKS)
        .setMaxNumSeqs(Integer.MAX_VALUE).setRequestLogLimit(1);
  }

  public SimEngine engine(String name) {
    return fleet.engine(name);
  }

  public List<SimEngine> engines() {
    return fleet.engines();
  }

  @Override
  public List<Engine> list() {
    return fleet.engines().stream().map(e -> new Engine(e.name(), e.options().getRole(), e.url())).toList();
  }

  /**
   * A fleet file for a replica with no load balancer in front: {@code serving.drain_delay_s} 0, so that SIGTERM stops it
   * within {@link RouterProcess#STOP_WAIT_S} instead of serving on for the drain delay first.
   */
  public static JsonObject unbalanced(JsonObject fleet) {
    return set(fleet, "serving", "drain_delay_s", 0);
  }

  /** Sets {@code section.key} in a fleet file, creating the section. */
  public static JsonObject set(JsonObject fleet, String section, String key, Object value) {
    JsonObject s = fleet.getJsonObject(section);
    if (s == null) {
      s = new JsonObject();
      fleet.put(section, s);
    }
    s.put(key, value);
    return fleet;
  }

  @Override
  public void close() {
    LoadGenerator.join(fleet.close().eventually(vertx::close), 30);
  }
}
