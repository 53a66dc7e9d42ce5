package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;

import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * A set of simulated engines started together (for example two producers and two consumers),
 * looked up by name and closed together. Start fails, closing whatever did start, if any engine
 * cannot start.
 */
public final class SimFleet {

  private final List<SimEngine> engines;

  private SimFleet(List<SimEngine> engines) {
    this.engines = Collections.unmodifiableList(engines);
  }

  public static Future<SimFleet> start(Vertx vertx, List<SimEngineOptions> engines) {
    return start(vertx, engines, Clock.systemUTC());
  }

  /** Starts every engine with the same (injectable) clock. */
  public static Future<SimFleet> start(Vertx vertx, List<SimEngineOptions> engines, Clock clock) {
    List<Future<SimEngine>> starts = new ArrayList<>();
    engines.forEach(options -> starts.add(SimEngine.start(vertx, options, clock)));
    return Future.join(starts).transform(ar -> {
      List<SimEngine> started = new ArrayList<>();
      starts.stream().filter(Future::succeeded).forEach(f -> started.add(f.result()));
      if (ar.succeeded()) {
        return Future.succeededFuture(new SimFleet(started));
      }
      return new SimFleet(started).close().transform(ignored -> Future.failedFuture(ar.cause()));
    });
  }

  public List<SimEngine> engines() {
    return engines;
  }

  /** The engine with this name; throws {@link NoSuchElementException} when there is none. */
  public SimEngine engine(String name) {
    return engines.stream().filter(e -> e.name().equals(name)).findFirst()
      .orElseThrow(() -> new NoSuchElementException("no simulated engine named " + name));
  }

  /** One line per engine: name, role, url, side channel, engine id. */
  public JsonArray describe() {
    JsonArray out = new JsonArray();
    engines.forEach(e -> out.add(new io.vertx.core.json.JsonObject()
      .put("name", e.name())
      .put("role", e.config().getRole())
      .put("url", e.url())
      .put("kv_side_channel", e.advertisedHost() + ":" + e.sideChannelPort())
      .put("engine_id", e.engineId())));
    return out;
  }

  /** Stops every engine gracefully, as vLLM on SIGTERM ({@link SimEngine#shutDown}); completes when all are stopped. */
  public Future<Void> shutDown(long timeoutMs) {
    return Future.join(engines().stream().map(e -> e.shutDown(timeoutMs)).toList()).mapEmpty();
  }

  public Future<Void> close() {
    List<Future<Void>> closes = new ArrayList<>();
    engines.forEach(e -> closes.add(e.close()));
    return Future.join(closes).mapEmpty();
  }
}
