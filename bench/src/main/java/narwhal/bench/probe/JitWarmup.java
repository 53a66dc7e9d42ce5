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

  /**
   * How an idle wait for the compilers ended ({@link #awaitIdle}): its length, the largest share of a router's CPU its
   * compilers used in the last slice, and whether each router's share was at most the bound.
   */
  public record IdleResult(double seconds, double worstShare, double quietShare, boolean settled) {
    public String describe() {
      return "JIT settling (no traffic): " + Fmt.num(seconds, 0) + " s; in its last slice the compilers used at most "
          + Fmt.percent(worstShare, 1) + " of a replica's CPU" + (settled ? " (settled: ≤ " + Fmt.percent(quietShare, 0) + ")"
          : " (not settled: above " + Fmt.percent(quietShare, 0) + " when the wait's bound came; the figure includes compilation)");
    }
  }

  private JitWarmup() {
  }

  /**
   * Waits, with no traffic, until the JIT compilers of each of {@code routers} used at most {@code quietShare} of that
   * router's CPU over a slice of {@code sliceS}, or {@code maxS} has passed. An idle JVM reaches its timers' compile
   * thresholds slowly and keeps compiling for minutes (issue 43: 40 % of an idle replica's CPU two minutes after it was
   * ready), so an idle figure taken sooner is mostly the JIT's, not the steady cost.
   */
  public static IdleResult awaitIdle(Progress progress, List<RouterProcess> routers, double sliceS, double maxS, double quietShare) {
    double elapsed = 0;
    while (true) {
      double[] cpu = new double[routers.size()];
      double[] jit = new double[routers.size()];
      for (int i = 0; i < cpu.length; i++) {
        cpu[i] = routers.get(i).cpuSeconds();
        jit[i] = routers.get(i).compilerCpuSeconds();
      }
      JvmProbe.sleep(Math.round(sliceS * 1000));
      elapsed += sliceS;
      double worst = 0;
      for (int i = 0; i < cpu.length; i++) {
        double used = routers.get(i).cpuSeconds() - cpu[i];
        double compiled = routers.get(i).compilerCpuSeconds() - jit[i];
        double share = used > 0 && compiled >= 0 ? compiled / used : Double.NaN;
        worst = Double.isNaN(share) || Double.isNaN(worst) ? Double.NaN : Math.max(worst, share);
      }
      boolean settled = !Double.isNaN(worst) && worst <= quietShare;
      if (settled || elapsed >= maxS) return new IdleResult(elapsed, worst, quietShare, settled);
      progress.say("JIT settling: " + Fmt.num(elapsed, 0) + " s, compilers still at " + Fmt.percent(worst, 0) + " of a replica's CPU");
    }
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
