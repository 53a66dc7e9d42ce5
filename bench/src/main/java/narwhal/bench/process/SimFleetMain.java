package narwhal.bench.process;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.load.LoadGenerator;
import narwhal.sim.SimEngineOptions;
import narwhal.sim.SimFleet;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A simulated fleet in a process of its own (see {@link SimProcess}): reads a JSON array of engine options from
 * the file named by its argument, starts the engines, prints one JSON line per engine (name, role, url) and then
 * {@code ready}, and runs until its standard input closes (its parent went away) or it is killed.
 */
public final class SimFleetMain {
  private SimFleetMain() {
  }

  public static void main(String[] args) throws Exception {
    JsonArray config = new JsonArray(Files.readString(Path.of(args[0])));
    List<SimEngineOptions> options = new ArrayList<>();
    config.forEach(o -> options.add(new SimEngineOptions((JsonObject) o)));
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
    SimFleet fleet = LoadGenerator.join(SimFleet.start(vertx, options), 60);
    fleet.describe().forEach(line -> System.out.println(((JsonObject) line).encode()));
    System.out.println("ready");
    System.out.flush();
    while (System.in.read() >= 0) {
      // wait for the parent to close our input
    }
    System.exit(0);
  }
}
