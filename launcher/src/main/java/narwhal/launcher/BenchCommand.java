package narwhal.launcher;

import narwhal.bench.Bench;
import narwhal.bench.BenchOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code narwhal bench <scenario>}: the benchmarks of QUALITY.md. Each prints its tables with the baseline beside
 * the router, writes a JSON result (and charts) under {@code bench-results/}, and exits 0 when it ran (missed
 * performance targets are findings), 3 when a correctness check failed, 2 for an unknown scenario, 1 when the
 * benchmark itself failed.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Run a benchmark scenario against simulated engines and report it against QUALITY.md.", ""},
    footerHeading = "%nScenarios:%n", footer = {
        "  overhead      P1 P4: first-byte overhead, req/s vs a direct two-leg client",
        "  relay         P2: streamed tokens/s through the router vs through nginx",
        "  concurrency   P3: 10,000 open streams on one replica: heap, errors, ITL",
        "  startup       P6: process start to first served request (single, clustered)",
        "  soak          R2: mixed load, 10%% faults: leaks, journal rows, hangs, heap",
        "  fuzz-edge     R5: malformed and hostile input at the HTTP edge",
        "  propagation   P5: ejection on 1 of 3 clustered replicas, seen by the others",
        "  replica-kill  R3: 3 clustered replicas under load, SIGKILL one",
        "  rolling-restart R4: 3 replicas behind haproxy, each SIGTERMed and restarted in turn",
        "  placement     issue 22: placement policies on 4+4 loaded engines: TTFT, cache hits, slow producer",
        "",
        "Results go to bench-results/<scenario>[-smoke].json and .png.",
        "Exit: 0 ran (missed targets are findings), 3 a correctness check failed,",
        "2 unknown scenario, 1 the benchmark itself failed."})
final class BenchCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "SCENARIO", description = "overhead, relay, concurrency, startup, soak, fuzz-edge, propagation, replica-kill, rolling-restart, placement")
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

  @Option(names = "--out", defaultValue = "bench-results", description = "results directory (default: ${DEFAULT-VALUE})")
  Path out;

  @Override
  public Integer call() {
    BenchOptions options;
    try {
      options = new BenchOptions(smoke, minutes, concurrency, profile, routerLoops, out);
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
