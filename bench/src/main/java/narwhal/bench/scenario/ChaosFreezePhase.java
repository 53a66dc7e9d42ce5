package narwhal.bench.scenario;

import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PhasedLoad;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.io.IOException;
import java.util.List;

/**
 * R10, a frozen replica. Three clustered replicas; streaming clients of B and C, back to back. A is frozen with
 * SIGSTOP (as a long GC pause or a stalled VM freezes a process), past Hazelcast's heartbeat limit in the full run,
 * then thawed with SIGCONT. Checked: B and C keep serving without an error, their p99 while A is frozen within one
 * shared-state operation timeout ({@code cluster.shared_state.operation_timeout_s}) of before, and A serves again
 * after it thaws.
 */
final class ChaosFreezePhase implements ChaosScenario.Phase {
  static final List<String> REPLICAS = List.of("A", "B", "C");
  static final String BEFORE = "before";
  static final String FROZEN = "A frozen";
  static final String THAWED = "A thawed";
  /** cluster.shared_state.operation_timeout_s's default, which the phase runs with. */
  static final double OPERATION_TIMEOUT_S = 0.5;

  @Override
  public String name() {
    return "freeze";
  }

  @Override
  public void run(BenchEnv env, ChaosScenario.Scope scope) throws Exception {
    boolean smoke = env.smoke();
    int clients = smoke ? 4 : 8;
    double stepS = smoke ? 3 : 10;
    double freezeS = smoke ? 5 : 20;
    BenchReport report = env.report();
    SimBench fleet = scope.own(SimBench.start(SimBench.twoPairs(engine -> engine.setItlMs(5))));
    LoadGenerator load = scope.own(new LoadGenerator());
    env.progress().say("freeze: starting 3 clustered replicas");
    ClusterReplicas cluster = scope.own(ClusterReplicas.prepare(env, fleet, load, SimBench::unbalanced, REPLICAS, false, false));
    for (int i = 0; i < REPLICAS.size(); i++) cluster.start(i, RouterProcess.Options.serving("--preflight=warn"));
    cluster.awaitMembers(REPLICAS.size(), 120_000);
    long pid = cluster.replica(0).pid();
    // a stopped process never handles the SIGTERM that stops it at the end
    scope.own((AutoCloseable) () -> signal("CONT", pid));
    report.layout("freeze (R10): 3 clustered replicas A B C, each its own JVM; " + clients + " streaming clients (16 tokens, 5 ms apart) of B and of C, "
        + "back to back; " + stepS + " s, then A gets SIGSTOP for " + freezeS + " s (Hazelcast's heartbeat limit: 15 s), SIGCONT, " + stepS + " s more");

    PhasedLoad b = load(cluster.client(1), clients);
    PhasedLoad c = load(cluster.client(2), clients);
    b.start();
    c.start();
    JvmProbe.sleep((long) (stepS * 500));
    phase(b, c, BEFORE);
    JvmProbe.sleep((long) (stepS * 1000));
    env.progress().say("freeze: SIGSTOP A (pid " + pid + ") for " + freezeS + " s");
    phase(b, c, FROZEN);
    String stopped = signal("STOP", pid);
    JvmProbe.sleep((long) (freezeS * 1000));
    String cont = signal("CONT", pid);
    phase(b, c, THAWED);
    long thawed = System.nanoTime();
    String servesAgain;
    try {
      cluster.await(0, s -> s != null, 60_000, "an answer");
      servesAgain = Fmt.num((System.nanoTime() - thawed) / 1e6, 0) + " ms after SIGCONT";
    } catch (IllegalStateException e) {
      servesAgain = null;
    }
    JvmProbe.sleep((long) (stepS * 1000));
    b.stop();
    c.stop();

    ResultTable table = new ResultTable("freeze (R10): what B's and C's clients saw, by phase; latency ms", "phase", "replica",
        "requests", "failed", "p50", "p99", "max");
    LatencyHistogram before = new LatencyHistogram();
    LatencyHistogram frozen = new LatencyHistogram();
    long frozenFailed = 0;
    for (PhasedLoad l : List.of(b, c)) {
      String name = l == b ? "B" : "C";
      for (var e : l.phases().entrySet()) {
        PhasedLoad.Tally t = e.getValue().get("stream");
        LatencyHistogram h = t.stats.latency();
        table.row(e.getKey(), name, t.stats.completed(), t.failed(), Fmt.pct(h, 50), Fmt.pct(h, 99), Fmt.ms(h.max()));
        if (e.getKey().equals(BEFORE)) before.merge(h);
        if (e.getKey().equals(FROZEN)) {
          frozen.merge(h);
          frozenFailed += t.failed();
        }
      }
    }
    report.table(table);
    long added = frozen.percentile(99) - before.percentile(99);
    report.verdict(Verdict.check("R10", "B and C while A is frozen: failed requests", frozenFailed + " of " + frozen.count(), "0",
        frozenFailed == 0 && stopped == null && cont == null));
    report.verdict(Verdict.perf("R10", "B and C's p99 while A is frozen, against before", Fmt.pct(frozen, 99) + " ms vs "
        + Fmt.pct(before, 99) + " ms (" + Fmt.deltaMs(added) + ")", "≤ +" + Fmt.num(OPERATION_TIMEOUT_S * 1000, 0) + " ms (one operation timeout)",
        frozen.count() > 0 && added <= OPERATION_TIMEOUT_S * 1e9));
    report.verdict(Verdict.check("R10", "A answers again after SIGCONT", servesAgain == null ? "not within 60 s" : servesAgain,
        "within 60 s", servesAgain != null));
    report.raw("freeze", new JsonObject().put("before", before.toJson()).put("frozen", frozen.toJson()));
  }

  private static PhasedLoad load(HttpWork client, int clients) {
    return new PhasedLoad(client, List.of(new PhasedLoad.Mode("stream", true, Bodies.completion(16, true).toBuffer())),
        clients, 60_000, "warm-up");
  }

  private static void phase(PhasedLoad b, PhasedLoad c, String name) {
    b.phase(name);
    c.phase(name);
  }

  /** {@code kill -NAME pid}; null when it went, else why not. */
  private static String signal(String name, long pid) {
    try {
      Process p = new ProcessBuilder("kill", "-" + name, String.valueOf(pid)).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes()).strip();
      return p.waitFor() == 0 ? null : out;
    } catch (IOException e) {
      return e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }
}
