package narwhal.bench.probe;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a run's time went on a shared machine: for named groups of processes (the routers, the engines, the load
 * generator, the balancer), the CPU they used and the time their threads waited for a core, read at the start and
 * end of a run ({@link ProcessCpu}). A figure per request says which process the cores were short for.
 */
public final class ProcessGroups {
  private final Map<String, List<Long>> groups = new LinkedHashMap<>();

  /** One reading of every group: name → {CPU s, wait s}. */
  public record Sample(Map<String, double[]> seconds) {
  }

  public ProcessGroups add(String name, List<Long> pids) {
    groups.put(name, List.copyOf(pids));
    return this;
  }

  public Sample sample() {
    Map<String, double[]> out = new LinkedHashMap<>();
    groups.forEach((name, pids) -> {
      double cpu = 0;
      double wait = 0;
      for (long pid : pids) {
        cpu += Math.max(0, ProcessCpu.seconds(pid));
        wait += Math.max(0, ProcessCpu.waitSeconds(pid));
      }
      out.put(name, new double[] {cpu, wait});
    });
    return new Sample(out);
  }

  /** Per group, CPU ms and core-wait ms per request between two samples. */
  public static JsonObject perRequest(Sample before, Sample after, long requests) {
    JsonObject out = new JsonObject();
    after.seconds().forEach((name, a) -> {
      double[] b = before.seconds().get(name);
      if (b == null || requests <= 0) return;
      out.put(name, new JsonObject().put("cpu_ms", 1000 * (a[0] - b[0]) / requests).put("wait_ms", 1000 * (a[1] - b[1]) / requests));
    });
    return out;
  }
}
