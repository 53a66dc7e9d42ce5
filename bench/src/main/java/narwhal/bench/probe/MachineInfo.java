package narwhal.bench.probe;

import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The machine a run happened on: cores, memory, CPU model, kernel, JVM, and the load average (other users). */
public final class MachineInfo {
  private MachineInfo() {
  }

  public static JsonObject describe() {
    return new JsonObject()
        .put("cores", Runtime.getRuntime().availableProcessors())
        .put("memory_gib", Math.round(memTotalKib() / 1024.0 / 1024.0 * 10) / 10.0)
        .put("cpu", cpuModel())
        .put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"))
        .put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"))
        .put("load_average", loadAverage());
  }

  /** One line for the report header. */
  public static String line(JsonObject m) {
    return m.getInteger("cores") + " cores, " + m.getDouble("memory_gib") + " GiB, " + m.getString("cpu") + ", "
        + m.getString("os") + ", " + m.getString("java") + ", load average " + m.getString("load_average");
  }

  /** The 1-, 5- and 15-minute load averages, e.g. {@code "0.52 0.40 0.33"}. */
  public static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static long memTotalKib() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    } catch (IOException | RuntimeException ignored) {
      // not Linux
    }
    return Runtime.getRuntime().maxMemory() / 1024;
  }

  private static String cpuModel() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) return line.substring(line.indexOf(':') + 1).trim();
      }
    } catch (IOException | RuntimeException ignored) {
      // not Linux
    }
    return System.getProperty("os.arch");
  }
}
