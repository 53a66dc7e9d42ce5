package narwhal.bench.scenario;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PhasedLoad;
import narwhal.bench.probe.BalancerWatch;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.HaproxyProcess;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * R4. Three clustered replicas behind haproxy (the settings of {@code deploy/haproxy.cfg}: health check
 * {@code GET /ready}, retries only where no replica answered anything), streaming and non-streaming clients of
 * the balancer, back to back. Each replica in turn gets SIGTERM, exits, and is started again on its port; the next
 * one goes once haproxy sees the restarted one UP and every replica counts three members. Then the same with SIGKILL.
 * Reported: every failed request and broken stream by kind, the latency added while each replica restarts (against
 * the settled phase right after it: the same warm replicas, all three serving; the steady phase at the start is still
 * JIT-cold on a loaded machine), and what haproxy saw (servers UP per poll, its health-check log). Target: zero failures
 * with SIGTERM; with SIGKILL, no more failures than the killed replica had requests in flight.
 */
public final class RollingRestartScenario implements Scenario {
  static final List<String> REPLICAS = List.of("A", "B", "C");
  static final int STREAM_TOKENS = 64;
  static final int JSON_TOKENS = 8;
  static final double ITL_MS = 10;
  static final String STEADY = "steady";
  static final String WARM_UP = "warm-up";

  @Override
  public String name() {
    return "rolling-restart";
  }

  @Override
  public String summary() {
    return "R4: three replicas behind haproxy under load, each SIGTERMed and restarted in turn (then SIGKILL): failed requests";
  }

  /** One replica's stop and start, as the balancer and the replica showed it (ms from the signal). */
  record Step(String phase, String replica, String signal, int inFlight, long downMs, long exitMs, long readyMs, long upMs,
              int fewestUp, String stopNote) {
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    Path binary = HaproxyProcess.binary().orElseThrow(() -> new IllegalStateException(
        "haproxy is not installed (Debian: apt-get install haproxy)"));
    boolean smoke = env.smoke();
    int clients = smoke ? 3 : 8;
    double steadyS = smoke ? 4 : 10;
    double settleS = smoke ? 1 : 5;
    int drainDelayS = smoke ? 2 : 5;
    BenchReport report = env.report();
    Progress progress = env.progress();
    SimBench fleet = env.own(SimBench.start(SimBench.twoPairs(engine -> engine.setItlMs(ITL_MS))));
    LoadGenerator load = env.own(new LoadGenerator());
    progress.say("starting 3 clustered replicas");
    // the default drain delay (5 s) is left out of the fleet file, so a build from before the key runs the same file
    ClusterReplicas cluster = ClusterReplicas.start(env, fleet, load,
        f -> drainDelayS == 5 ? f : SimBench.set(f, "serving", "drain_delay_s", drainDelayS), REPLICAS, true,
        RouterProcess.Options.serving("--preflight=warn"));
    List<HaproxyProcess.Server> servers = new ArrayList<>();
    for (int i = 0; i < REPLICAS.size(); i++) servers.add(new HaproxyProcess.Server(REPLICAS.get(i), cluster.port(i)));
    HaproxyProcess haproxy = env.own(HaproxyProcess.start(binary, env.tmp().resolve("haproxy"), servers));
    BalancerWatch watch = env.own(new BalancerWatch(haproxy).start());
    long t0 = System.nanoTime();
    for (String name : REPLICAS) watch.await(name, true, t0, 30_000);

    report.layout("bench process: simulated P0 P1 (prefill) and D0 D1 (decode), " + ITL_MS + " ms between tokens; "
            + clients + " streaming (" + STREAM_TOKENS + " tokens) and " + clients + " non-streaming (" + JSON_TOKENS
            + " tokens) clients of haproxy, back to back")
        .layout("haproxy " + binary + ": " + HaproxyProcess.settingsSource() + "'s settings (deploy/haproxy.cfg: GET /ready every 500 ms, "
            + "fastinter 100 ms, fall 2, rise 2; leastconn; a connection per request; retries 2 on conn-failure, empty-response and 503, redispatch)")
        .layout("router: 3 replicas A B C, each its own JVM (java -jar narwhal.jar serve, cluster.enabled), Hazelcast on 127.0.0.1, "
            + "each on a fixed port; serving.drain_delay_s " + drainDelayS + ", graceful_timeout_s 30")
        .layout("each replica in turn: signal, wait for its exit, start it again (--preflight=skip; the first start --preflight=warn), wait until haproxy shows it UP and all count 3 members, "
            + settleS + " s more; first with SIGTERM, then with SIGKILL")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("clients_per_mode", clients).parameter("steady_s", steadyS).parameter("settle_s", settleS)
        .parameter("drain_delay_s", drainDelayS).parameter("stream_tokens", STREAM_TOKENS).parameter("itl_ms", ITL_MS);

    HttpWork front = new HttpWork(load.vertx(), load.client(4 * clients), "127.0.0.1", haproxy.port());
    PhasedLoad traffic = new PhasedLoad(front, List.of(
        new PhasedLoad.Mode("stream", true, Bodies.completion(STREAM_TOKENS, true).toBuffer()),
        new PhasedLoad.Mode("json", false, Bodies.completion(JSON_TOKENS, false).toBuffer())), clients, 60_000, WARM_UP);
    traffic.start();
    // the first half warms the replicas up (their first requests are several times slower); the second is the baseline
    progress.say("warm-up then steady load, " + steadyS / 2 + " s each");
    JvmProbe.sleep((long) (steadyS * 500));
    traffic.phase(STEADY);
    JvmProbe.sleep((long) (steadyS * 500));

    List<Step> steps = new ArrayList<>();
    for (String signal : List.of("SIGTERM", "SIGKILL")) {
      for (int i : smoke ? List.of(signal.equals("SIGTERM") ? 0 : 1) : List.of(0, 1, 2)) {
        steps.add(restart(env, cluster, watch, haproxy, traffic, i, signal));
        traffic.phase("after " + signal + " " + REPLICAS.get(i));
        JvmProbe.sleep((long) (settleS * 1000));
      }
    }
    progress.say("stopping the load");
    traffic.stop();
    report(report, traffic, steps, haproxy);
  }

  /** Signals replica {@code i}, waits for its exit, starts it again and waits until the balancer and the cluster have it. */
  private static Step restart(BenchEnv env, ClusterReplicas cluster, BalancerWatch watch, HaproxyProcess haproxy,
                              PhasedLoad traffic, int i, String signal) {
    String name = REPLICAS.get(i);
    String phase = signal + " " + name;
    env.progress().say(phase + " (pid " + cluster.replica(i).pid() + ")");
    traffic.phase(phase);
    // requests in flight at the signal: the replica's own count, haproxy's sessions to it now and at its polls of the
    // last 2 s (a stream lasts about a second here), whichever is largest — an upper bound, read just before the signal
    JsonObject state = cluster.state(i);
    HaproxyProcess.ServerState before = haproxy.servers().get(name);
    int inFlight = Math.max(Math.max(state == null ? -1 : state.getInteger("in_flight", -1), before == null ? -1 : before.sessions()),
        watch.mostSessionsSince(name, System.nanoTime() - 2_000_000_000L));
    long t0 = System.nanoTime();
    long exitMs;
    String stopNote = null;
    if (signal.equals("SIGTERM")) {
      cluster.terminate(i);
      exitMs = cluster.replica(i).awaitExit(ClusterReplicas.LEAVE_WAIT_S + 30 + 10);
      stopNote = cluster.replica(i).stopNote();
    } else {
      cluster.kill(i);
      exitMs = (System.nanoTime() - t0) / 1_000_000;
    }
    BalancerWatch.Poll down = watch.await(name, false, t0, 30_000);
    // --preflight=skip: the engines were checked at the first start and the other replicas serve with them; on a starved
    // machine the restart's preflight probes alone took minutes (and a timed-out check failed a strict one)
    RouterProcess again = cluster.start(i, RouterProcess.Options.serving("--preflight=skip"));
    BalancerWatch.Poll up = watch.await(name, true, t0, 60_000);
    cluster.awaitMembers(REPLICAS.size(), 120_000);
    return new Step(phase, name, signal, inFlight, (down.nanos() - t0) / 1_000_000, exitMs, again.readyMs(),
        (up.nanos() - t0) / 1_000_000, watch.fewestUpSince(t0), stopNote);
  }

  /**
   * A phase's latency cells: p50, p99, both minus {@code base}'s (the settled phase after it), and the first-token
   * p99 when {@code firstToken} is given (streams).
   */
  static List<String> latencyCells(LatencyHistogram h, LatencyHistogram base, LatencyHistogram firstToken) {
    boolean both = h.count() > 0 && base.count() > 0;
    return List.of(Fmt.pct(h, 50), Fmt.pct(h, 99),
        both ? Fmt.deltaMs(h.percentile(50) - base.percentile(50)) : "—",
        both ? Fmt.deltaMs(h.percentile(99) - base.percentile(99)) : "—",
        firstToken == null ? "—" : Fmt.pct(firstToken, 99));
  }

  private static void report(BenchReport report, PhasedLoad traffic, List<Step> steps, HaproxyProcess haproxy) {
    Map<String, Map<String, PhasedLoad.Tally>> phases = traffic.phases();
    ResultTable latency = new ResultTable("what the balancer's clients saw, by phase (requests that ended in it); latency ms, "
        + "added = p50 / p99 minus the settled phase after the restart (the steady phase: minus itself)", "phase", "mode", "requests", "failed", "p50", "p99", "added p50", "added p99",
        "first token p99");
    ResultTable failures = new ResultTable("failed requests by kind", "phase", "mode", "kind", "count");
    phases.forEach((phase, byMode) -> byMode.forEach((mode, t) -> {
      LatencyHistogram h = t.stats.latency();
      Map<String, PhasedLoad.Tally> settled = phases.get("after " + phase);
      LatencyHistogram base = settled == null || settled.get(mode) == null ? h : settled.get(mode).stats.latency();
      List<Object> row = new ArrayList<>(List.of(phase, mode, t.stats.completed(), t.failed()));
      row.addAll(latencyCells(h, base, mode.equals("stream") ? t.stats.firstToken() : null));
      latency.row(row.toArray());
      new TreeMap<>(t.kinds).forEach((kind, n) -> {
        if (!kind.equals("ok")) failures.row(phase, mode, kind, n);
      });
    }));
    report.table(latency);
    if (failures.size() > 0) report.table(failures);

    ResultTable restarts = new ResultTable("each restart, ms from the signal", "replica", "signal", "in flight at signal",
        "haproxy DOWN", "exited", "restart to serving", "haproxy UP", "fewest servers UP");
    steps.forEach(s -> restarts.row(s.replica(), s.signal(), s.inFlight(), s.downMs(), s.exitMs(), s.readyMs(), s.upMs(), s.fewestUp()));
    report.table(restarts);
    steps.stream().filter(s -> s.stopNote() != null).forEach(s -> report.note(s.replica() + ": " + s.stopNote()));

    List<String> health = haproxy.healthLog();
    long noServer = health.stream().filter(l -> l.contains("no server available")).count();
    ResultTable log = new ResultTable("haproxy's health-check log", "line");
    health.forEach(log::row);
    report.table(log);

    long termFailed = traffic.failed("SIGTERM") + traffic.failed("after SIGTERM");
    long termBroken = traffic.broken("SIGTERM") + traffic.broken("after SIGTERM");
    long termRequests = traffic.requests("SIGTERM") + traffic.requests("after SIGTERM");
    long killFailed = traffic.failed("SIGKILL") + traffic.failed("after SIGKILL");
    long killBroken = traffic.broken("SIGKILL") + traffic.broken("after SIGKILL");
    long killInFlight = steps.stream().filter(s -> s.signal().equals("SIGKILL")).mapToLong(Step::inFlight).sum();
    int fewestTerm = steps.stream().filter(s -> s.signal().equals("SIGTERM")).mapToInt(Step::fewestUp).min().orElse(-1);
    report.verdict(Verdict.check("R4", "SIGTERM rolling restart: failed requests (of all)", termFailed + " of " + termRequests,
        "0", termFailed == 0));
    report.verdict(Verdict.check("R4", "SIGTERM rolling restart: broken streams", String.valueOf(termBroken), "0", termBroken == 0));
    report.verdict(Verdict.check("R4", "SIGTERM rolling restart: fewest servers UP in haproxy (polled every "
        + BalancerWatch.INTERVAL_MS + " ms)", String.valueOf(fewestTerm), "≥ 1", fewestTerm >= 1));
    report.verdict(Verdict.info("R4", "haproxy logged \"no server available\"", noServer + " time(s)"));
    report.verdict(Verdict.check("R4", "SIGKILL: failed requests ≤ the killed replicas' requests in flight",
        killFailed + " failed (" + killBroken + " broken streams), " + killInFlight + " in flight", "failed ≤ in flight",
        killFailed <= killInFlight));
    for (Step s : steps) {
      Map<String, PhasedLoad.Tally> byMode = phases.get(s.phase());
      report.verdict(Verdict.info("R4", "added latency while " + s.replica() + " restarts (" + s.signal() + "), p99 stream / json",
          added(byMode, phases.get("after " + s.phase()), "stream") + " / " + added(byMode, phases.get("after " + s.phase()), "json")
              + " ms (against the settled phase after it)"));
    }
    report.raw("phases", traffic.toJson());
    report.raw("health_log", new JsonArray(health));
    JsonArray rawSteps = new JsonArray();
    steps.forEach(s -> rawSteps.add(new JsonObject().put("phase", s.phase()).put("in_flight", s.inFlight()).put("down_ms", s.downMs())
        .put("exit_ms", s.exitMs()).put("ready_ms", s.readyMs()).put("up_ms", s.upMs()).put("fewest_up", s.fewestUp())
        .put("stop_note", s.stopNote())));
    report.raw("steps", rawSteps);
  }

  /** The p99 latency {@code mode}'s requests of a restart phase added against the settled phase after it. */
  static String added(Map<String, PhasedLoad.Tally> byMode, Map<String, PhasedLoad.Tally> base, String mode) {
    if (byMode == null || byMode.get(mode) == null || base == null || base.get(mode) == null) return "—";
    LatencyHistogram h = byMode.get(mode).stats.latency();
    LatencyHistogram settled = base.get(mode).stats.latency();
    return h.count() == 0 || settled.count() == 0 ? "—" : Fmt.deltaMs(h.percentile(99) - settled.percentile(99));
  }

}
