package narwhal.bench;

import narwhal.bench.process.OtlpSink;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Verdict;
import narwhal.bench.scenario.ChaosScenario;
import narwhal.bench.scenario.BatchCostScenario;
import narwhal.bench.scenario.EngineChurnScenario;
import narwhal.bench.scenario.FleetScaleScenario;
import narwhal.bench.scenario.TenantsScenario;
import narwhal.bench.scenario.ConcurrencyScenario;
import narwhal.bench.scenario.FuzzEdgeScenario;
import narwhal.bench.scenario.OverheadScenario;
import narwhal.bench.scenario.PlacementScenario;
import narwhal.bench.scenario.PropagationScenario;
import narwhal.bench.scenario.RelayScenario;
import narwhal.bench.scenario.ReplicaKillScenario;
import narwhal.bench.scenario.RollingRestartScenario;
import narwhal.bench.scenario.SoakScenario;
import narwhal.bench.scenario.StartupScenario;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code narwhal bench <scenario>}: runs one scenario, prints its tables and its verdicts against the targets of
 * docs/benchmarks.md, writes the JSON result (and charts) under the results directory. Exit status: 0 ran (performance targets
 * may be missed: that is a finding), 3 a correctness check was violated, 1 the benchmark itself failed.
 */
public final class Bench {
  private static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

  static {
    register(new OverheadScenario());
    register(new RelayScenario());
    register(new ConcurrencyScenario());
    register(new StartupScenario());
    register(new SoakScenario());
    register(new FuzzEdgeScenario());
    register(new PropagationScenario());
    register(new ReplicaKillScenario());
    register(new RollingRestartScenario());
    register(new PlacementScenario());
    register(new ChaosScenario());
    register(new BatchCostScenario());
    register(new EngineChurnScenario());
    register(new TenantsScenario());
    register(new FleetScaleScenario());
  }

  private Bench() {
  }

  private static void register(Scenario s) {
    SCENARIOS.put(s.name(), s);
  }

  public static Map<String, String> scenarios() {
    Map<String, String> out = new LinkedHashMap<>();
    SCENARIOS.forEach((k, v) -> out.put(k, v.summary()));
    return out;
  }

  public static int run(String name, BenchOptions options) {
    Scenario scenario = SCENARIOS.get(name);
    if (scenario == null) {
      System.err.println("narwhal bench: unknown scenario \"" + name + "\"; expected one of " + String.join(", ", SCENARIOS.keySet()));
      return 2;
    }
    BenchEnv env = new BenchEnv(name, options);
    BenchReport report = env.report();
    report.printHeader();
    report.parameter("router_event_loops", options.routerLoops() > 0 ? String.valueOf(options.routerLoops()) : "default (one per processor)");
    OtlpSink sink = options.tracing() ? env.otlpSink() : null;
    int status = 0;
    try {
      scenario.run(env);
    } catch (Throwable e) {
      report.note("the benchmark failed: " + e);
      e.printStackTrace(System.out);
      status = 1;
    } finally {
      env.close();
    }
    if (sink != null) {
      // read after the routers stopped: their last batch of spans is flushed when they stop
      report.parameter("tracing", "on (sample ratio 1.0): " + sink.exports() + " OTLP exports, " + sink.bytes() + " bytes received");
      report.verdict(Verdict.check("tracing", "the routers' spans reach the OTLP sink", sink.exports() + " exports", "> 0",
          sink.exports() > 0));
    }
    System.out.println();
    System.out.print(report.verdictTable().render());
    Path file = report.write(options.out());
    System.out.println("result: " + file);
    if (status == 0 && report.violated()) status = 3;
    return status;
  }
}
