package narwhal.bench.scenario;

import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PhasedLoad;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.probe.ReadinessProbe;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * R12, readiness that stays fast. One clustered replica A relays many open streams (simulated engines at 40 ms per
 * token, the load generator on the same cores); then a sibling replica B's JVM starts on the same machine and joins
 * A's cluster. Throughout, {@code /ready} and {@code /health} are probed every 50 ms as haproxy checks (a new
 * connection each), on A's {@code server.health_port} (where deploy/haproxy.cfg sends the checks) and, for
 * comparison, on its client port. Reported: each probe's time by phase, p50, p99 and max, and any answer but 200.
 */
final class ChaosReadinessPhase implements ChaosScenario.Phase {
  static final List<String> REPLICAS = List.of("A", "B");
  static final double ITL_MS = 40;
  static final long PERIOD_MS = 50;
  static final int PROBE_TIMEOUT_MS = 5_000;
  static final String RAMP = "ramp-up";
  static final String SIBLING = "sibling JVM starting";
  static final String JOINED = "sibling joined";

  @Override
  public String name() {
    return "readiness";
  }

  @Override
  public void run(BenchEnv env, ChaosScenario.Scope scope) throws Exception {
    boolean smoke = env.smoke();
    int streams = smoke ? 100 : 1_000;
    int tokens = smoke ? 25 : 200;
    double busyS = smoke ? 2 : 15;
    double joinedS = smoke ? 1 : 5;
    String busy = "with " + streams + " streams";
    BenchReport report = env.report();
    SimBench fleet = scope.own(SimBench.start(SimBench.twoPairs(engine -> engine.setItlMs(ITL_MS))));
    LoadGenerator load = scope.own(new LoadGenerator());
    env.progress().say("readiness: starting replica A");
    ClusterReplicas cluster = scope.own(ClusterReplicas.prepare(env, fleet, load,
        f -> SimBench.set(f, "serving", "drain_delay_s", 0), REPLICAS, false, true));
    cluster.start(0, RouterProcess.Options.serving("--preflight=warn"));
    int healthPort = cluster.healthPort(0);
    int clientPort = cluster.replica(0).port();

    report.layout("readiness (R12): bench process: simulated P0 P1 (prefill) and D0 D1 (decode), " + ITL_MS + " ms between tokens; "
            + streams + " streaming clients (" + tokens + " tokens each, back to back) of replica A")
        .layout("readiness (R12): replica A (its own JVM, clustered, server.health_port set); once the streams are open, replica B's JVM starts "
            + "on the same machine and joins A's cluster")
        .layout("readiness (R12): GET /ready and GET /health every " + PERIOD_MS + " ms each, a new connection per probe, from threads of their own, "
            + "on A's health port and (for comparison) its client port; an unanswered probe counts at " + PROBE_TIMEOUT_MS + " ms");
    report.parameter("readiness_streams", streams).parameter("readiness_tokens", tokens).parameter("readiness_itl_ms", ITL_MS);

    Map<String, ReadinessProbe> probes = new LinkedHashMap<>();
    probes.put("health port /ready", scope.own(new ReadinessProbe(healthPort, "/ready", PERIOD_MS, PROBE_TIMEOUT_MS, RAMP)));
    probes.put("health port /health", scope.own(new ReadinessProbe(healthPort, "/health", PERIOD_MS, PROBE_TIMEOUT_MS, RAMP)));
    probes.put("client port /ready", scope.own(new ReadinessProbe(clientPort, "/ready", PERIOD_MS, PROBE_TIMEOUT_MS, RAMP)));
    probes.put("client port /health", scope.own(new ReadinessProbe(clientPort, "/health", PERIOD_MS, PROBE_TIMEOUT_MS, RAMP)));
    probes.values().forEach(ReadinessProbe::start);

    HttpWork front = new HttpWork(load.vertx(), load.client(streams + 16), "127.0.0.1", clientPort);
    PhasedLoad traffic = new PhasedLoad(front, List.of(new PhasedLoad.Mode("stream", true, Bodies.completion(tokens, true).toBuffer())),
        streams, 120_000, RAMP);
    env.progress().say("readiness: opening " + streams + " streams through A");
    traffic.start();
    // the streams flow once about every client has had one answer (the replica's first requests are JIT-cold)
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (traffic.requests(RAMP) < streams && System.nanoTime() < deadline) JvmProbe.sleep(100);
    int openAtBusy = traffic.open();
    label(probes, traffic, busy);
    JvmProbe.sleep((long) (busyS * 1000));

    env.progress().say("readiness: starting replica B's JVM beside A");
    label(probes, traffic, SIBLING);
    int openAtSibling = traffic.open();
    RouterProcess sibling = cluster.start(1, RouterProcess.Options.serving("--preflight=warn"));
    cluster.awaitMembers(2, 120_000);
    label(probes, traffic, JOINED);
    JvmProbe.sleep((long) (joinedS * 1000));
    label(probes, traffic, "stopping");
    probes.values().forEach(ReadinessProbe::close);
    traffic.stop();

    ResultTable table = new ResultTable("readiness (R12): probe time by phase, ms", "phase", "probe", "probes", "not 200", "p50",
        "p99", "max", "answers");
    for (String phase : List.of(RAMP, busy, SIBLING, JOINED)) {
      probes.forEach((what, probe) -> {
        ReadinessProbe.Tally t = probe.tallies().get(phase);
        if (t == null) return;
        table.row(phase, what, t.latency.count(), t.notOk(), Fmt.pct(t.latency, 50), Fmt.pct(t.latency, 99),
            Fmt.ms(t.latency.max()), t.statuses.toString());
      });
    }
    report.table(table);
    ResultTable outcomes = new ResultTable("readiness (R12): the streams through A, by phase", "phase", "requests", "failed", "kinds");
    traffic.phases().forEach((phase, byMode) -> byMode.forEach((mode, t) -> outcomes.row(phase, t.stats.completed(), t.failed(), t.kinds.toString())));
    report.table(outcomes);

    Predicate<String> loaded = p -> p.equals(busy) || p.equals(SIBLING) || p.equals(JOINED);
    JsonObject raw = new JsonObject().put("open_streams_at_busy", openAtBusy).put("open_streams_at_sibling", openAtSibling)
        .put("sibling_ready_ms", sibling.readyMs());
    for (String path : List.of("/ready", "/health")) {
      ReadinessProbe.Tally t = probes.get("health port " + path).merged(loaded);
      String measured = "p50 " + Fmt.pct(t.latency, 50) + ", p99 " + Fmt.pct(t.latency, 99) + ", max " + Fmt.ms(t.latency.max())
          + " ms (" + t.latency.count() + " probes)";
      report.verdict(Verdict.perf("R12", "health port " + path + " " + busy + " and a sibling's start: p99 / max", measured,
          "p99 ≤ 100 ms, max ≤ 1,000 ms", t.latency.count() > 0 && t.latency.percentileMs(99) <= 100 && t.latency.max() <= 1_000_000_000L));
      report.verdict(Verdict.check("R12", "health port " + path + " answered 200 throughout (A serves all along)",
          t.notOk() + " of " + t.latency.count() + " not 200: " + t.statuses, "0", t.notOk() == 0 && t.latency.count() > 0));
      ReadinessProbe.Tally c = probes.get("client port " + path).merged(loaded);
      report.verdict(Verdict.info("R12", "client port " + path + " (for comparison): p50 / p99 / max",
          Fmt.pct(c.latency, 50) + " / " + Fmt.pct(c.latency, 99) + " / " + Fmt.ms(c.latency.max()) + " ms, " + c.notOk() + " not 200"));
      raw.put("health_port" + path, t.latency.toJson()).put("client_port" + path, c.latency.toJson());
    }
    report.verdict(Verdict.info("R12", "streams open through A when measured (busy / sibling start)", openAtBusy + " / " + openAtSibling));
    report.raw("readiness", raw);
  }

  private static void label(Map<String, ReadinessProbe> probes, PhasedLoad traffic, String name) {
    probes.values().forEach(p -> p.label(name));
    traffic.phase(name);
  }
}
