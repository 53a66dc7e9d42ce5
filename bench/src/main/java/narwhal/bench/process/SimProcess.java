package narwhal.bench.process;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.probe.ProcessCpu;
import narwhal.sim.SimEngineOptions;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Simulated engines in a JVM of their own ({@link SimFleetMain}): used where one process could not hold both the
 * clients' sockets and the engines' (every process here may open at most 20,000 files), and so the engines' CPU
 * shows apart from the load generator's.
 */
public final class SimProcess implements EngineFleet {
  private final Process process;
  private final List<Engine> engines;

  private SimProcess(Process process, List<Engine> engines) {
    this.process = process;
    this.engines = engines;
  }

  public static SimProcess start(BenchEnv env, String name, List<SimEngineOptions> options, String heap) {
    try {
      JsonArray config = new JsonArray();
      options.forEach(o -> config.add(o.toJson()));
      Path file = env.tmp().resolve(name + "-engines.json");
      Files.writeString(file, config.encodePrettily());
      Path log = env.tmp().resolve(name + "-engines.log");
      Process process = new ProcessBuilder(env.java().toString(), "-Xmx" + heap, "-cp", env.toolsJar().toString(),
          SimFleetMain.class.getName(), file.toString()).redirectError(log.toFile()).start();
      List<Engine> engines = new ArrayList<>();
      BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      String line;
      while ((line = out.readLine()) != null && !line.equals("ready")) {
        JsonObject e = new JsonObject(line);
        engines.add(new Engine(e.getString("name"), e.getString("role"), e.getString("url")));
      }
      if (line == null) {
        process.destroyForcibly();
        throw new IllegalStateException("simulated engines did not start: " + Files.readString(log).strip());
      }
      return new SimProcess(process, List.copyOf(engines));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public List<Engine> list() {
    return engines;
  }

  public long pid() {
    return process.pid();
  }

  public double cpuSeconds() {
    return ProcessCpu.seconds(process.pid());
  }

  @Override
  public void close() {
    try {
      process.getOutputStream().close();
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (IOException | InterruptedException e) {
      process.destroyForcibly();
    }
  }
}
