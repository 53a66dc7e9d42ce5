package narwhal.bench;

import java.nio.file.Path;
import java.util.List;

/**
 * Options of {@code narwhal bench}: {@code smoke} makes every scenario seconds-long (for CI; its figures mean
 * nothing), {@code minutes} bounds the soak, {@code concurrency} overrides a scenario's concurrency levels
 * (empty: the scenario's own), {@code profile} records the router with JFR and summarises the hot path,
 * {@code routerLoops} sets every router replica's {@code server.event_loops} (0: the replica's default, one per
 * processor), {@code tracing} makes every router export a trace of each request to a sink in the bench process
 * ({@code telemetry.sample_ratio} 1.0), {@code out} is where results go.
 */
public record BenchOptions(boolean smoke, double minutes, List<Integer> concurrency, boolean profile, int routerLoops, boolean tracing, Path out) {
  public BenchOptions {
    if (routerLoops < 0) {
      throw new IllegalArgumentException("--router-event-loops: " + routerLoops + " is not valid: expected an integer of at least 1");
    }
    concurrency = concurrency == null ? List.of() : List.copyOf(concurrency);
    if (minutes <= 0) throw new IllegalArgumentException("--minutes: " + minutes + " is not valid: expected a number above 0");
    for (int c : concurrency) {
      if (c < 1) throw new IllegalArgumentException("--concurrency: " + c + " is not valid: expected integers of at least 1");
    }
  }

  /** The event loops each router replica serves from: the {@code --router-event-loops} given, else the replica's default. */
  public int effectiveRouterLoops() {
    return routerLoops > 0 ? routerLoops : Math.max(1, Runtime.getRuntime().availableProcessors());
  }

  /** The concurrency levels to run: the ones given, else {@code full} or, with --smoke, {@code smoke}. */
  public List<Integer> levels(List<Integer> full, List<Integer> smokeLevels) {
    if (!concurrency.isEmpty()) return concurrency;
    return smoke ? smokeLevels : full;
  }
}
