package narwhal.bench.scenario;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PhasedLoad;
import narwhal.bench.probe.BalancerWatch;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.HaproxyProcess;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * R8, kill -9 behind the balancer. Three clustered replicas (each with its {@code server.health_port}, which haproxy
 * checks, as deploy/haproxy.cfg says) behind haproxy with deploy/haproxy.cfg's settings; streaming and non-streaming
 * clients of the balancer, back to back. A replica gets SIGKILL (as the OOM killer or a lost node does), the load
 * goes on, then it is started again. Every request is judged by when it started against the kill: one that started
 * after it must not fail; the ones that were running may fail, but no more of them than the killed replica had in
 * flight. haproxy's log of the requests it retried or failed shows how each was handled.
 */
final class ChaosKillPhase implements ChaosScenario.Phase {
  static final List<String> REPLICAS = List.of("A", "B", "C");
  static final int STREAM_TOKENS = 64;
  static final int JSON_TOKENS = 8;
  static final double ITL_MS = 10;

  /** One kill: which replica, when ({@link System#nanoTime()}), what it had in flight, when haproxy saw it go and come back. */
  record Kill(String replica, long nanos, int inFlight, long downMs, long upMs) {
  }

  /** The requests a kill is judged by: the ones running when it came and the ones started after it (until the next kill). */
  record Judged(long inFlight, long inFlightFailed, long after, long afterFailed, Map<String, Integer> inFlightKinds,
                Map<String, Integer> afterKinds) {
    static Judged of(List<Exchange> all, long killed, long until) {
      long inFlight = 0;
      long inFlightFailed = 0;
      long after = 0;
      long afterFailed = 0;
      Map<String, Integer> inFlightKinds = new TreeMap<>();
      Map<String, Integer> afterKinds = new TreeMap<>();
      for (Exchange e : all) {
        if (e.startNanos() <= killed && e.endNanos() >= killed) {
          inFlight++;
          if (!e.ok()) {
            inFlightFailed++;
            inFlightKinds.merge(PhasedLoad.kind(e), 1, Integer::sum);
          }
        } else if (e.startNanos() > killed && e.startNanos() < until) {
          after++;
          if (!e.ok()) {
            afterFailed++;
            afterKinds.merge(PhasedLoad.kind(e), 1, Integer::sum);
          }
        }
      }
      return new Judged(inFlight, inFlightFailed, after, afterFailed, inFlightKinds, afterKinds);
    }
  }

  @Override
  public String name() {
    return "kill";
  }

  @Override
  public void run(BenchEnv env, ChaosScenario.Scope scope) throws Exception {
    Path binary = HaproxyProcess.binary().orElseThrow(() -> new IllegalStateException(
        "the kill phase needs haproxy (Debian: apt-get install haproxy)"));
    boolean smoke = env.smoke();
    int clients = smoke ? 4 : 12;
    double steadyS = smoke ? 3 : 10;
    double afterS = smoke ? 3 : 8;
    double settleS = smoke ? 1 : 3;
    List<Integer> victims = smoke ? List.of(1) : List.of(1, 2, 0);
    BenchReport report = env.report();
    SimBench fleet = scope.own(SimBench.start(SimBench.twoPairs(engine -> engine.setItlMs(ITL_MS))));
    LoadGenerator load = scope.own(new LoadGenerator());
    env.progress().say("kill: starting 3 clustered replicas");
    ClusterReplicas cluster = scope.own(ClusterReplicas.prepare(env, fleet, load,
        f -> SimBench.set(f, "serving", "drain_delay_s", 2), REPLICAS, true, true));
    for (int i = 0; i < REPLICAS.size(); i++) cluster.start(i, RouterProcess.Options.serving("--preflight=warn"));
    cluster.awaitMembers(REPLICAS.size(), 120_000);
    List<HaproxyProcess.Server> servers = new ArrayList<>();
    for (int i = 0; i < REPLICAS.size(); i++) servers.add(new HaproxyProcess.Server(REPLICAS.get(i), cluster.port(i), cluster.healthPort(i)));
    HaproxyProcess haproxy = scope.own(HaproxyProcess.start(binary, env.tmp().resolve("kill-haproxy"), servers));
    BalancerWatch watch = scope.own(new BalancerWatch(haproxy).start());
    long t0 = System.nanoTime();
    for (String name : REPLICAS) watch.await(name, true, t0, 30_000);

    report.layout("kill (R8): bench process: simulated P0 P1 (prefill) and D0 D1 (decode), " + ITL_MS + " ms between tokens; "
            + clients + " streaming (" + STREAM_TOKENS + " tokens) and " + clients + " non-streaming (" + JSON_TOKENS
            + " tokens) clients of haproxy, back to back")
        .layout("kill (R8): haproxy " + binary + " with " + HaproxyProcess.settingsSource() + "'s settings, checking each replica's server.health_port")
        .layout("kill (R8): 3 replicas A B C, each its own JVM, clustered; in turn " + victims.stream().map(REPLICAS::get).toList()
            + ": SIGKILL under load, " + afterS + " s of load on the others, started again (--preflight=skip), UP in haproxy, " + settleS + " s more");
    report.parameter("kill_clients_per_mode", clients).parameter("kill_after_s", afterS);

    ConcurrentLinkedQueue<Exchange> exchanges = new ConcurrentLinkedQueue<>();
    HttpWork front = new HttpWork(load.vertx(), load.client(4 * clients), "127.0.0.1", haproxy.port());
    PhasedLoad traffic = new PhasedLoad(front, List.of(
        new PhasedLoad.Mode("stream", true, Bodies.completion(STREAM_TOKENS, true).toBuffer()),
        new PhasedLoad.Mode("json", false, Bodies.completion(JSON_TOKENS, false).toBuffer())), clients, 60_000, "warm-up")
        .onEach((mode, e) -> exchanges.add(e));
    traffic.start();
    env.progress().say("kill: warm-up then steady load, " + steadyS / 2 + " s each");
    JvmProbe.sleep((long) (steadyS * 500));
    traffic.phase("steady");
    JvmProbe.sleep((long) (steadyS * 500));

    List<Kill> kills = new ArrayList<>();
    for (int i : victims) {
      String name = REPLICAS.get(i);
      traffic.phase("SIGKILL " + name);
      // in flight at the kill, an upper bound: the replica's own count, haproxy's sessions to it now and over the last 2 s
      JsonObject state = cluster.state(i);
      HaproxyProcess.ServerState before = haproxy.servers().get(name);
      int inFlight = Math.max(Math.max(state == null ? -1 : state.getInteger("in_flight", -1), before == null ? -1 : before.sessions()),
          watch.mostSessionsSince(name, System.nanoTime() - 2_000_000_000L));
      env.progress().say("kill: SIGKILL " + name + " (pid " + cluster.replica(i).pid() + ")");
      long killed = System.nanoTime();
      cluster.kill(i);
      BalancerWatch.Poll down = watch.await(name, false, killed, 30_000);
      JvmProbe.sleep((long) (afterS * 1000));
      traffic.phase("restart " + name);
      cluster.start(i, RouterProcess.Options.serving("--preflight=skip"));
      BalancerWatch.Poll up = watch.await(name, true, down.nanos(), 60_000);
      cluster.awaitMembers(REPLICAS.size(), 120_000);
      JvmProbe.sleep((long) (settleS * 1000));
      kills.add(new Kill(name, killed, inFlight, (down.nanos() - killed) / 1_000_000, (up.nanos() - killed) / 1_000_000));
    }
    env.progress().say("kill: stopping the load");
    traffic.stop();
    report(report, List.copyOf(exchanges), kills, haproxy);
  }

  private static void report(BenchReport report, List<Exchange> all, List<Kill> kills, HaproxyProcess haproxy) {
    ResultTable table = new ResultTable("kill (R8): each SIGKILL; requests judged by when they started against the kill",
        "replica", "in flight on it (upper bound)", "running at the kill (all replicas)", "of those failed",
        "started after", "of those failed", "haproxy DOWN ms", "haproxy UP ms");
    ResultTable kinds = new ResultTable("kill (R8): failed requests by kind", "replica", "when", "kind", "count");
    long afterFailed = 0;
    long after = 0;
    long inFlightFailed = 0;
    long inFlightBound = 0;
    JsonArray raw = new JsonArray();
    for (int k = 0; k < kills.size(); k++) {
      Kill kill = kills.get(k);
      long until = k + 1 < kills.size() ? kills.get(k + 1).nanos() : Long.MAX_VALUE;
      Judged j = Judged.of(all, kill.nanos(), until);
      table.row(kill.replica(), kill.inFlight(), j.inFlight(), j.inFlightFailed(), j.after(), j.afterFailed(), kill.downMs(), kill.upMs());
      j.inFlightKinds().forEach((kind, n) -> kinds.row(kill.replica(), "running at the kill", kind, n));
      j.afterKinds().forEach((kind, n) -> kinds.row(kill.replica(), "started after", kind, n));
      afterFailed += j.afterFailed();
      after += j.after();
      inFlightFailed += j.inFlightFailed();
      inFlightBound += Math.max(0, kill.inFlight());
      raw.add(new JsonObject().put("replica", kill.replica()).put("in_flight", kill.inFlight()).put("running", j.inFlight())
          .put("running_failed", j.inFlightFailed()).put("after", j.after()).put("after_failed", j.afterFailed())
          .put("down_ms", kill.downMs()).put("up_ms", kill.upMs())
          .put("running_kinds", new JsonObject(new TreeMap<>(j.inFlightKinds()))).put("after_kinds", new JsonObject(new TreeMap<>(j.afterKinds()))));
    }
    report.table(table);
    if (kinds.size() > 0) report.table(kinds);

    long firstKill = kills.isEmpty() ? Long.MAX_VALUE : kills.get(0).nanos();
    long beforeFailed = all.stream().filter(e -> e.endNanos() < firstKill && !e.ok()).count();
    List<HaproxyProcess.LoggedRequest> logged = haproxy.requestLog();
    Map<String, Integer> handled = new TreeMap<>();
    for (HaproxyProcess.LoggedRequest r : logged) {
      handled.merge("status " + r.status() + ", termination " + r.termination() + ", retries " + r.retries(), 1, Integer::sum);
    }
    ResultTable log = new ResultTable("kill (R8): requests haproxy retried, redispatched (+) or failed, from its log", "how", "count");
    handled.forEach(log::row);
    report.table(log);
    long retried = logged.stream().filter(r -> !r.retries().equals("0")).count();

    report.verdict(Verdict.check("R8", "kill -9 behind haproxy: requests started after the kill that failed",
        afterFailed + " of " + after, "0", afterFailed == 0));
    report.verdict(Verdict.check("R8", "kill -9 behind haproxy: requests running at the kill that failed ≤ the killed replica's in flight",
        inFlightFailed + " failed, " + inFlightBound + " in flight", "failed ≤ in flight", inFlightFailed <= inFlightBound));
    report.verdict(Verdict.info("R8", "requests haproxy retried on another replica (its log)", String.valueOf(retried)));
    report.verdict(Verdict.info("R8", "failed requests before the first kill", String.valueOf(beforeFailed)));
    report.raw("kill", new JsonObject().put("kills", raw).put("haproxy_requests", new JsonArray(logged.stream()
        .limit(200).map(HaproxyProcess.LoggedRequest::line).toList())).put("health_log", new JsonArray(haproxy.healthLog())));
  }
}
