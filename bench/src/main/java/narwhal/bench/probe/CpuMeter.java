package narwhal.bench.probe;

import narwhal.bench.load.LoadGenerator;
import narwhal.bench.process.RouterProcess;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.DoubleSupplier;

/**
 * CPU seconds used by named processes (router, nginx, the bench process itself) inside measured windows only:
 * read when a window opens and when it closes, the differences added up until {@link #reset()}.
 */
public final class CpuMeter implements LoadGenerator.Window {
  private final Map<String, DoubleSupplier> sources = new LinkedHashMap<>();
  private final Map<String, Double> opened = new LinkedHashMap<>();
  private final Map<String, Double> totals = new LinkedHashMap<>();
  private double wall;
  private long openedAt;

  public CpuMeter add(String name, DoubleSupplier cpuSeconds) {
    sources.put(name, cpuSeconds);
    return this;
  }

  @Override
  public void opened() {
    openedAt = System.nanoTime();
    sources.forEach((k, v) -> opened.put(k, v.getAsDouble()));
  }

  @Override
  public void closed() {
    wall += (System.nanoTime() - openedAt) / 1e9;
    sources.forEach((k, v) -> {
      Double from = opened.get(k);
      double now = v.getAsDouble();
      if (from != null && from >= 0 && now >= 0) totals.merge(k, now - from, Double::sum);
    });
  }

  /** A router's CPU as {@code router}, and the part its JIT compilers used as {@code router-jit}. */
  public CpuMeter router(RouterProcess router) {
    return add("router", router::cpuSeconds).add("router-jit", router::compilerCpuSeconds);
  }

  /** {@code part}'s CPU seconds over {@code whole}'s, over the windows so far. */
  public double share(String part, String whole) {
    return seconds(part) / seconds(whole);
  }

  /** CPU seconds of {@code name} over the windows so far (NaN when unreadable). */
  public double seconds(String name) {
    return totals.getOrDefault(name, Double.NaN);
  }

  /** Average cores busy: CPU seconds over wall seconds of the windows. */
  public double cores(String name) {
    return wall == 0 ? Double.NaN : seconds(name) / wall;
  }

  public void reset() {
    totals.clear();
    wall = 0;
  }
}
