package narwhal.tools;

import narwhal.launcher.CommandFailure;

import narwhal.bench.Bench;
import narwhal.bench.BenchOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code narwhal bench <scenario>}: the benchmarks of docs/benchmarks.md. Each prints its tables with the baseline
 * beside the router, writes a JSON result (and charts) under {@code bench-results/}, and exits 0 when it ran (missed
 * performance targets are findings), 3 when a correctness check failed, 2 for an unknown scenario, 1 when the
 * benchmark itself failed. The help lists the scenarios {@link Bench} registers ({@link #listScenarios}).
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Run a benchmark scenario against simulated engines and report it against docs/benchmarks.md.", ""})
final class BenchCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "SCENARIO", description = "one of the scenarios below")
  String scenario;

  @Option(names = "--smoke", description = "seconds-long run of the scenario (CI); its figures are not meaningful")
  boolean smoke;

  @Option(names = "--minutes", defaultValue = "2", description = "soak duration in minutes (default: ${DEFAULT-VALUE})")
  double minutes;

  @Option(names = "--concurrency", split = ",", paramLabel = "N",
      description = "concurrency levels (overhead, relay), stream count (concurrency) or clients (soak), comma-separated")
  List<Integer> concurrency = new ArrayList<>();

  @Option(names = "--profile", description = "record the router with JFR and summarise its hot methods (overhead, relay, concurrency, soak)")
  boolean profile;

  @Option(names = "--router-event-loops", paramLabel = "N", defaultValue = "0",
      description = "server.event_loops of every router the scenario starts (default: the router's own, one per processor)")
  int routerLoops;

  @Option(names = "--tracing",
      description = "every router the scenario starts exports a trace of each request (sample ratio 1.0) to an OTLP sink in the bench process")
  boolean tracing;

  @Option(names = "--out", defaultValue = "bench-results", description = "results directory (default: ${DEFAULT-VALUE})")
  Path out;

  /** The help's footer: every scenario {@link Bench} registers, with its summary, then where results go and the exit codes. */
  static void listScenarios(CommandLine bench) {
    List<String> footer = new ArrayList<>(List.of("", "Scenarios:"));
    Bench.scenarios().forEach((name, summary) -> footer.add(String.format("  %-16s %s", name, summary)));
    footer.addAll(List.of("", "Results go to bench-results/<scenario>[-smoke].json and .png.",
        "Exit: 0 ran (missed targets are findings), 3 a correctness check failed,",
        "2 unknown scenario, 1 the benchmark itself failed."));
    // the summaries are plain text: a '%' in one must not read as a format specifier
    bench.setUsageHelpWidth(160);
    bench.getCommandSpec().usageMessage().footer(footer.stream().map(line -> line.replace("%", "%%")).toArray(String[]::new));
  }

  @Override
  public Integer call() {
    BenchOptions options;
    try {
      options = new BenchOptions(smoke, minutes, concurrency, profile, routerLoops, tracing, out);
    } catch (IllegalArgumentException e) {
      throw new CommandFailure(e.getMessage());
    }
    try {
      return Bench.run(scenario, options);
    } catch (Throwable t) {
      // Whatever escaped (e.g. a class that can no longer be loaded because the jar was rebuilt under us), end the
      // command: Vert.x's non-daemon threads would otherwise keep the JVM alive with nothing left to do.
      t.printStackTrace();
      return 1;
    }
  }
}
