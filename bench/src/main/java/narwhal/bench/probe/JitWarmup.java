package narwhal.bench.probe;

import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.Work;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;

import java.util.List;

/**
 * Warms the JVMs of a scenario until their JIT has settled: the scenario's work runs in slices until the compiler
 * threads of the router and of the bench process (load generator, engines, direct baseline) each used at most
 * {@link #QUIET_SHARE} of their process's CPU over a slice, or {@code maxS} has passed. On two shared cores the C2
 * queue lags the load: measured here, 20 s into a relay run the router's compilers still used as much CPU as its
 * event loops, so a fixed short warm-up counted compilations and profiled code as the router's cost per token.
 */
public final class JitWarmup {
  public static final double QUIET_SHARE = 0.03;

  /** How the warm-up ended: its length, and each JVM's compiler share of its CPU in the last slice. */
  public record Result(double seconds, double routerShare, double benchShare, boolean settled) {
    public String describe() {
      return "JIT warm-up: " + Fmt.num(seconds, 0) + " s; in its last slice the compilers used " + Fmt.percent(routerShare, 1)
          + " of the router's CPU and " + Fmt.percent(benchShare, 1) + " of the bench process's"
          + (settled ? "" : " (not settled: the measurement includes compilation)");
    }
  }

  private JitWarmup() {
  }

  /** The routers' CPU seconds added up; -1 when one of them cannot be read. */
  private static double sum(List<RouterProcess> routers, java.util.function.ToDoubleFunction<RouterProcess> seconds) {
    double total = 0;
    for (RouterProcess router : routers) {
      double v = seconds.applyAsDouble(router);
      if (v < 0) return -1;
      total += v;
    }
    return total;
  }

  /** Runs every work of {@code works} for {@code sliceS} in turn at {@code concurrency}, slice after slice. */
  public static Result run(LoadGenerator load, Progress progress, RouterProcess router, int concurrency, double sliceS, double maxS,
                    List<Work> works) {
    return run(load, progress, List.of(router), concurrency, sliceS, maxS, works);
  }

  /** As above, until the compilers of every router of {@code routers} together are quiet (clustered replicas). */
  public static Result run(LoadGenerator load, Progress progress, List<RouterProcess> routers, int concurrency, double sliceS,
                           double maxS, List<Work> works) {
    double elapsed = 0;
    while (true) {
      CpuMeter cpu = new CpuMeter().add("router", () -> sum(routers, RouterProcess::cpuSeconds))
          .add("router-jit", () -> sum(routers, RouterProcess::compilerCpuSeconds))
          .add("bench", ProcessCpu::self).add("bench-jit", ProcessCpu::selfCompiler);
      for (Work work : works) load.closedLoop("warm-up", concurrency, 0, sliceS, 30, work, cpu);
      elapsed += sliceS * works.size();
      double routerShare = cpu.share("router-jit", "router");
      double benchShare = cpu.share("bench-jit", "bench");
      boolean settled = routerShare <= QUIET_SHARE && benchShare <= QUIET_SHARE;
      if (settled || elapsed >= maxS) return new Result(elapsed, routerShare, benchShare, settled);
      progress.say("warm-up: " + Fmt.num(elapsed, 0) + " s, compilers still at " + Fmt.percent(routerShare, 0)
          + " of the router's CPU, " + Fmt.percent(benchShare, 0) + " of the bench's");
    }
  }
}
