package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetClient;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.ConnectionCrowd;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PeriodicProbe;
import narwhal.bench.load.RunStats;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.probe.ReadinessProbe;
import narwhal.bench.process.FreePort;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Issue 40's connection bounds, each on a router replica of its own beside the fuzz cases' one (which keeps the
 * defaults): keep-alive connections left idle after one {@code GET /health} are closed after
 * {@code server.idle_timeout_s}, and connections past {@code server.max_connections} are closed as they arrive and
 * counted. Throughout, {@code /ready} on {@code server.health_port} is probed as a balancer does (a new connection
 * every {@link #PERIOD_MS} ms), and in the idle phase a real completion on the client port as often.
 */
final class EdgeConnectionPhases {
  static final String TARGET = "issue 40";
  static final long PERIOD_MS = 100;
  static final int PROBE_TIMEOUT_MS = 5_000;
  private static final Pattern REFUSED = Pattern.compile("(?m)^narwhal_connections_refused_total(?:\\{[^}]*})? ([0-9.eE+]+)");

  private final BenchEnv env;
  private final SimBench fleet;
  private final LoadGenerator load;
  private final NetClient net;

  EdgeConnectionPhases(BenchEnv env, SimBench fleet, LoadGenerator load, NetClient net) {
    this.env = env;
    this.fleet = fleet;
    this.load = load;
    this.net = net;
  }

  /** A replica of its own, with {@code server.health_port} set and {@code server.<key>} at {@code value}. */
  private Replica replica(String name, String key, Object value) {
    int healthPort = FreePort.pick();
    JsonObject cfg = SimBench.unbalanced(fleet.fleetFile(env.tmp().resolve(name + "-journal.jsonl"), 0));
    SimBench.set(cfg, "server", "health_port", healthPort);
    SimBench.set(cfg, "server", key, value);
    RouterProcess router = RouterProcess.start(env, name, cfg, new RouterProcess.Options(List.of("-Xmx1g"), false, false));
    return new Replica(router, healthPort);
  }

  private record Replica(RouterProcess router, int healthPort) implements AutoCloseable {
    @Override
    public void close() {
      router.close();
    }
  }

  /**
   * {@code n} keep-alive connections, each idle after one answered {@code GET /health}, against a replica with
   * {@code server.idle_timeout_s} {@code timeoutS}; counted {@code graceS} after the last answer plus the timeout.
   */
  void idle(int n, double timeoutS, double graceS) {
    BenchReport report = env.report();
    env.progress().say("idle keep-alive: a replica with server.idle_timeout_s " + timeoutS + ", " + n + " connections idle after one GET /health");
    report.parameter("idle_connections", n).parameter("idle_timeout_s", timeoutS);
    try (Replica r = replica("fuzz-edge-idle", "idle_timeout_s", timeoutS);
         ReadinessProbe health = new ReadinessProbe(r.healthPort(), "/ready", PERIOD_MS, PROBE_TIMEOUT_MS, "idle").start()) {
      report.layout("idle keep-alive (issue 40): a second replica (-Xmx1g, pid " + r.router().pid() + "), server.idle_timeout_s " + timeoutS
          + ", server.health_port set; " + n + " raw connections from the bench, " + PERIOD_MS + " ms probes of /ready (health port) "
          + "and a completion (client port)");
      HttpWork via = new HttpWork(load.vertx(), load.client(8), "127.0.0.1", r.router().port());
      Buffer completion = Bodies.completion(2, false).toBuffer();
      PeriodicProbe completions = new PeriodicProbe(load.vertx(), "completions while idle", PERIOD_MS,
          () -> via.post(FuzzCases.C, completion, false, PROBE_TIMEOUT_MS));
      ConnectionCrowd crowd = new ConnectionCrowd(load.vertx(), net, r.router().port());
      long t0 = System.nanoTime();
      LoadGenerator.join(crowd.open(n, 64, 10_000), 600);
      long openMs = (System.nanoTime() - t0) / 1_000_000;
      env.progress().say("idle keep-alive: " + crowd.answered() + " answered in " + openMs + " ms, " + crowd.open() + " open; waiting for the timeout");
      long deadline = crowd.lastAnswerNanos() + (long) ((timeoutS + graceS) * 1e9);
      while (crowd.open() > 0 && System.nanoTime() < deadline) JvmProbe.sleep(100);
      while (System.nanoTime() < deadline) JvmProbe.sleep(100);
      int stillOpen = crowd.open();
      RunStats probes = completions.stop(PROBE_TIMEOUT_MS);
      LoadGenerator.join(crowd.closeAll(), 30);
      ReadinessProbe.Tally ready = health.merged(l -> true);
      LatencyHistogram idled = crowd.idleBeforeClose();
      long early = crowd.closedWithin((long) (timeoutS * 0.8e9));
      long probe5xx = probes.statuses().entrySet().stream().filter(e -> e.getKey() >= 500).mapToLong(java.util.Map.Entry::getValue).sum();

      ResultTable table = new ResultTable("idle keep-alive connections (server.idle_timeout_s " + timeoutS + ")", "connections",
          "answered", "peak open", "opened in ms", "closed by the router", "idle before close ms (min / p50 / max)",
          "still open " + Fmt.num(graceS, 0) + " s after the timeout");
      table.row(n, crowd.answered(), crowd.peakOpen(), openMs, crowd.closedAfterAnswer(),
          Fmt.ms(idled.min()) + " / " + Fmt.pct(idled, 50) + " / " + Fmt.ms(idled.max()), stillOpen);
      report.table(table);
      ResultTable probeTable = new ResultTable("probes while the connections idled", "probe", "count", "failed", "p50 ms", "p99 ms", "max ms");
      probeTable.row("health port GET /ready", ready.latency.count(), ready.notOk() + (ready.notOk() > 0 ? " " + ready.statuses : ""),
          Fmt.pct(ready.latency, 50), Fmt.pct(ready.latency, 99), Fmt.ms(ready.latency.max()));
      probeTable.row("client port completion", probes.completed(), probes.errors() + (probes.errors() > 0 ? " " + probes.errorSamples() : ""),
          Fmt.pct(probes.latency(), 50), Fmt.pct(probes.latency(), 99), Fmt.ms(probes.latency().max()));
      report.table(probeTable);

      report.verdict(Verdict.check(TARGET, "idle keep-alive connections answered", crowd.answered() + " / " + n, "all", crowd.answered() == n));
      report.verdict(Verdict.check(TARGET, "idle connections still open " + Fmt.num(graceS, 0) + " s after server.idle_timeout_s",
          String.valueOf(stillOpen), "0", stillOpen == 0));
      report.verdict(Verdict.check(TARGET, "idle connections closed before 80 % of server.idle_timeout_s", String.valueOf(early), "0", early == 0));
      report.verdict(Verdict.check(TARGET, "health port /ready probes failed while idle connections were open (max ms)",
          ready.notOk() + " of " + ready.latency.count() + " (max " + Fmt.ms(ready.latency.max()) + ")", "0", ready.notOk() == 0 && ready.latency.count() > 0));
      report.verdict(Verdict.check(TARGET, "client port completions failed while idle connections were open (max ms)",
          probes.errors() + " of " + probes.completed() + " (max " + Fmt.ms(probes.latency().max()) + ")", "0",
          probes.errors() == 0 && probes.completed() > 0 && probe5xx == 0));
      report.raw("idle_closed_after", idled.toJson()).raw("idle_ready_probes", ready.latency.toJson()).raw("idle_completions", probes.toJson());
    }
  }

  /**
   * A replica with {@code server.max_connections} {@code cap}: {@code cap} connections answered and kept open, then
   * {@code extra} more, which must be closed unanswered and counted in {@code narwhal_connections_refused_total} (read
   * over one of the open connections, the client port being full).
   */
  void cap(int cap, int extra) {
    BenchReport report = env.report();
    env.progress().say("connection cap: a replica with server.max_connections " + cap + ", " + (cap + extra) + " connections");
    report.parameter("max_connections", cap).parameter("connections_past_cap", extra);
    try (Replica r = replica("fuzz-edge-cap", "max_connections", cap);
         ReadinessProbe health = new ReadinessProbe(r.healthPort(), "/ready", PERIOD_MS, PROBE_TIMEOUT_MS, "cap").start()) {
      report.layout("connection cap (issue 40): a third replica (-Xmx1g, pid " + r.router().pid() + "), server.max_connections " + cap
          + ", server.health_port set; " + (cap + extra) + " raw connections from the bench, " + PERIOD_MS + " ms probes of /ready (health port)");
      ConnectionCrowd admitted = new ConnectionCrowd(load.vertx(), net, r.router().port());
      LoadGenerator.join(admitted.open(cap, 32, 10_000), 300);
      ConnectionCrowd past = new ConnectionCrowd(load.vertx(), net, r.router().port());
      LoadGenerator.join(past.open(extra, 16, 5_000), 300);
      String metrics = LoadGenerator.join(admitted.askOnOpen(Buffer.buffer(
          "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", "ISO-8859-1")), 30);
      Matcher m = REFUSED.matcher(metrics);
      long counted = m.find() ? (long) Double.parseDouble(m.group(1)) : -1;
      LoadGenerator.join(admitted.closeAll(), 30);
      LoadGenerator.join(past.closeAll(), 30);
      ReadinessProbe.Tally ready = health.merged(l -> true);
      LatencyHistogram refusedIn = past.refusedAfter();

      ResultTable table = new ResultTable("connections past server.max_connections " + cap, "kept open (answered)", "more opened",
          "closed unanswered", "answered past the cap", "closed within ms (p50 / max)", "narwhal_connections_refused_total",
          "health /ready failed (max ms)");
      table.row(admitted.answered(), extra, past.refused(), past.answered(), Fmt.pct(refusedIn, 50) + " / " + Fmt.ms(refusedIn.max()),
          counted, ready.notOk() + " of " + ready.latency.count() + " (" + Fmt.ms(ready.latency.max()) + ")");
      report.table(table);

      report.verdict(Verdict.check(TARGET, "connections up to server.max_connections answered", admitted.answered() + " / " + cap, "all",
          admitted.answered() == cap));
      report.verdict(Verdict.check(TARGET, "connections past the cap closed unanswered", past.refused() + " / " + extra
          + " (" + past.answered() + " answered)", "all", past.refused() == extra && past.answered() == 0));
      report.verdict(Verdict.perf(TARGET, "a connection past the cap closed within (max)", Fmt.ms(refusedIn.max()) + " ms", "≤ 1000 ms",
          refusedIn.count() > 0 && refusedIn.max() <= 1_000_000_000L));
      report.verdict(Verdict.check(TARGET, "narwhal_connections_refused_total", String.valueOf(counted), String.valueOf(extra), counted == extra));
      report.verdict(Verdict.check(TARGET, "health port /ready probes failed at the cap (max ms)",
          ready.notOk() + " of " + ready.latency.count() + " (max " + Fmt.ms(ready.latency.max()) + ")", "0", ready.notOk() == 0 && ready.latency.count() > 0));
    }
  }
}
