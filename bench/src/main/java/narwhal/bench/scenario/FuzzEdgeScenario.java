package narwhal.bench.scenario;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RawHttp;
import narwhal.bench.load.RunStats;
import narwhal.bench.probe.HeapSampler;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.common.config.ServingConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * R5. Sends every {@link FuzzCases} case to a router replica over a raw socket and checks the answer: a 4xx for
 * hostile input, never a 5xx, never a connection held forever; after each case the router must still answer
 * {@code /health} and serve a real completion; a request-smuggling case must be refused with its connection closed,
 * the request pipelined behind it never answered. Then a crowd of stalled connections (is the router still serving
 * while they hang?) and a flood of malformed requests. The router's heap is sampled throughout and measured after
 * a full collection before and after; its journal must hold no 5xx row. Issue 40: a batch of 10,000 one-token prompts
 * and one at the default bound (router CPU and RSS around each, no 5xx, RSS growth under 200 MB), then
 * {@link EdgeConnectionPhases}: idle keep-alive connections closed after {@code server.idle_timeout_s}, and the
 * {@code server.max_connections} cap, each on a replica of its own.
 */
public final class FuzzEdgeScenario implements Scenario {
  /** Issue 40's batch: 10,000 one-token prompts, past the default bound (a 400 naming the key, or answered if raised). */
  static final int BATCH_PROMPTS = 10_000;
  static final long BATCH_RSS_BOUND = 200_000_000L;

  @Override
  public String name() {
    return "fuzz-edge";
  }

  @Override
  public String summary() {
    return "R5: malformed and hostile input at the HTTP edge: always a 4xx, never a crash, 5xx or hang";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    long slowBoundMs = smoke ? 2_000 : 30_000;
    int crowd = smoke ? 100 : 1000;
    BenchReport report = env.report();
    Progress progress = env.progress();
    Path journal = env.tmp().resolve("journal.jsonl");
    Files.deleteIfExists(journal);
    SimBench fleet = env.own(SimBench.start(List.of(SimBench.engine("P0", "prefill"), SimBench.engine("D0", "decode"))));
    // The router must cut slow senders off well inside the bound this scenario waits (serving.receive_timeout_s).
    JsonObject cfg = SimBench.set(SimBench.unbalanced(fleet.fleetFile(journal, 0)), "serving", "receive_timeout_s", slowBoundMs / 2000.0);
    progress.say("starting the router replica (-Xmx1g, JMX for heap readings)");
    RouterProcess router = env.own(RouterProcess.start(env, name(), cfg, new RouterProcess.Options(List.of("-Xmx1g"), true, false)));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpClientAgent http = load.client(64);
    HttpWork via = new HttpWork(load.vertx(), http, "127.0.0.1", router.port());
    NetClient net = load.vertx().createNetClient(new NetClientOptions().setConnectTimeout(5000).setTcpNoDelay(true));
    report.layout("bench process: raw-socket and HTTP clients (Vert.x) + simulated P0 (prefill) and D0 (decode)")
        .layout("router: one replica, its own JVM (-Xmx1g), pid " + router.pid() + ", default serving limits (4 MiB bodies), receive timeout " + slowBoundMs / 2000.0 + " s")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("slow_sender_bound_ms", slowBoundMs).parameter("stalled_crowd", crowd);

    JvmProbe probe = router.probe();
    long liveBefore = probe.fullGcThenUsed();
    HeapSampler heap = new HeapSampler(probe).start(load::inFlight);
    List<FuzzCases.Case> cases = FuzzCases.all(slowBoundMs);
    ResultTable table = new ResultTable("hostile input at the edge", "group", "case", "expected", "answer", "ms", "still serving",
        "verdict");
    int passed = 0;
    int any5xx = 0;
    int hangs = 0;
    int notServing = 0;
    int smuggled = 0;
    List<String> failures = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      FuzzCases.Case c = cases.get(i);
      if (c.slow() || i % 10 == 0) progress.say("case " + (i + 1) + "/" + cases.size() + ": " + c.group() + " / " + c.name());
      long wait = c.slow() ? slowBoundMs : 10_000;
      RawHttp.Answer a = onLoop(load, () -> RawHttp.exchange(load.vertx(), net, router.port(), c.script(), wait), wait / 1000.0 + 30);
      boolean serving = stillServing(via);
      boolean ok = switch (c.expect()) {
        case ANSWER_4XX -> a.all4xx(c.script().answers());
        case NO_5XX -> a.answered() && !a.any5xx() && a.statuses().stream().allMatch(s -> s == 200 || s >= 400 && s < 500);
        case BOUNDED -> !a.any5xx() && (a.all4xx() || a.closedByServer()) && a.millis() < wait;
        case REFUSED_ALONE -> a.statuses().size() == 1 && a.all4xx() && a.closedByServer();
        case BOTH_SERVED -> a.statuses().equals(List.of(200, 200));
      } && serving;
      if (c.expect() == FuzzCases.Expect.REFUSED_ALONE && a.statuses().size() > 1) smuggled++;
      if (a.any5xx()) any5xx++;
      if (a.ending().startsWith("held open")) hangs++;
      if (!serving) notServing++;
      if (ok) passed++;
      else failures.add(c.name() + ": " + a.describe());
      table.row(c.group(), c.name(), c.expect().text, a.describe(), a.millis(), serving ? "yes" : "NO", ok ? "pass" : "FAIL");
    }

    progress.say(crowd + " stalled connections (partial headers), then a real request");
    CrowdResult crowdResult = crowd(load, net, router.port(), crowd, via);
    boolean crowdOk = crowdResult.served && crowdResult.connected == crowd;
    table.row("slow senders", crowd + " stalled connections at once", "others still served", crowdResult.describe(), crowdResult.millis,
        crowdResult.served ? "yes" : "NO", crowdOk ? "pass" : "FAIL");
    if (crowdOk) passed++;
    else failures.add("stalled crowd: " + crowdResult.describe());

    progress.say("flood of malformed JSON requests");
    Buffer bad = Buffer.buffer("{\"model\":");
    RunStats flood = load.closedLoop("flood", 32, 0, smoke ? 1 : 5, 30, () -> via.post(FuzzCases.C, bad, false, 10_000));
    Map<Integer, Long> floodStatuses = new TreeMap<>(flood.statuses());
    boolean floodOk = flood.completed() > 0 && floodStatuses.keySet().stream().allMatch(s -> s >= 400 && s < 500)
        && flood.count(Exchange.Outcome.TRANSPORT_ERROR) == 0 && flood.count(Exchange.Outcome.TIMEOUT) == 0;
    table.row("volume", "malformed JSON flood, 32 clients", "4xx", flood.completed() + " answers " + floodStatuses
        + (flood.errors() - flood.count(Exchange.Outcome.HTTP_ERROR) > 0 ? " + " + (flood.errors() - flood.count(Exchange.Outcome.HTTP_ERROR)) + " other" : ""),
        Fmt.num(flood.seconds() * 1000, 0), stillServing(via) ? "yes" : "NO", floodOk ? "pass" : "FAIL");
    if (floodOk) passed++;
    else failures.add("flood: " + flood.errorSamples());
    if (floodStatuses.keySet().stream().anyMatch(s -> s >= 500)) any5xx++;

    List<Integer> batchSizes = List.of(BATCH_PROMPTS, smoke ? 200 : ServingConfig.DEFAULT_MAX_BATCH_PROMPTS);
    ResultTable batchTable = new ResultTable("one batched completions request, one-token prompts (serving.max_batch_prompts "
        + ServingConfig.DEFAULT_MAX_BATCH_PROMPTS + ")", "prompts", "answer", "wall ms", "router CPU s", "RSS before MiB", "RSS peak MiB",
        "RSS after MiB", "growth (peak) MiB", "still serving");
    for (int prompts : batchSizes) {
      progress.say("a batch of " + prompts + " one-token prompts");
      Buffer batch = BatchCostScenario.batch(prompts);
      BatchCostScenario.Cost cost = BatchCostScenario.cost(router, () -> via.postBlocking(FuzzCases.C, batch, false, 300_000));
      boolean serving = stillServing(via);
      boolean ok = cost.status() > 0 && cost.status() < 500 && cost.growth() < BATCH_RSS_BOUND && serving;
      if (cost.status() >= 500) any5xx++;
      if (!serving) notServing++;
      batchTable.row(prompts, cost.answer(), cost.wallMs(), Fmt.num(cost.cpuS(), 2), Fmt.mib(cost.rssBefore()), Fmt.mib(cost.rssPeak()),
          Fmt.mib(cost.rssAfter()), Fmt.mib(cost.growth()), serving ? "yes" : "NO");
      report.verdict(Verdict.check("issue 40", "a batch of " + prompts + " one-token prompts: answer, router RSS growth (peak − before), CPU",
          cost.answer() + ", " + Fmt.mib(cost.growth()) + " MiB, " + Fmt.num(cost.cpuS(), 2) + " s CPU", "no 5xx, < 200 MB", ok));
    }
    heap.stop();
    long liveAfter = probe.fullGcThenUsed();
    report.table(table).table(batchTable);

    List<JsonObject> rows = SoakScenario.readJournal(journal, 0, 2000);
    long rows5xx = rows.stream().filter(r -> r.containsKey("rid") && r.getValue("status") instanceof Number n && n.intValue() >= 500).count();
    int total = cases.size() + 2;
    report.verdict(Verdict.check("R5", "hostile inputs answered as expected", passed + " / " + total, "all", passed == total));
    report.verdict(Verdict.check("R5", "5xx answers (and 5xx journal rows)", any5xx + " (" + rows5xx + ")", "0", any5xx == 0 && rows5xx == 0));
    report.verdict(Verdict.check("R5", "requests answered behind a refused framing (smuggled)", String.valueOf(smuggled), "0", smuggled == 0));
    report.verdict(Verdict.check("R5", "connections held open without an answer (slow senders)", String.valueOf(hangs), "0", hangs == 0));
    report.verdict(Verdict.check("R5", "cases after which the router stopped serving, or died", notServing + (router.alive() ? "" : ", died"),
        "0", notServing == 0 && router.alive()));
    report.verdict(Verdict.check("R5", "memory bounded: router heap peak (live before → after, full GC)",
        Fmt.mib(heap.peakUsed()) + " MiB (" + Fmt.mib(liveBefore) + " → " + Fmt.mib(liveAfter) + " MiB)", "peak < 1024 MiB, live +≤ 16 MiB",
        heap.peakUsed() < (1L << 30) && liveAfter - liveBefore <= 16L << 20));
    if (!failures.isEmpty()) report.note("failed cases: " + failures);
    report.raw("heap", heap.toJson()).raw("flood", flood.toJson());

    EdgeConnectionPhases connections = new EdgeConnectionPhases(env, fleet, load, net);
    connections.idle(smoke ? 500 : 5_000, smoke ? 2 : 15, smoke ? 2 : 5);
    connections.cap(smoke ? 50 : 200, smoke ? 20 : 300);
    LoadGenerator.join(net.close(), 10);
  }

  private static <T> T onLoop(LoadGenerator load, java.util.function.Supplier<Future<T>> work, double seconds) {
    Promise<T> p = Promise.promise();
    load.vertx().runOnContext(v -> work.get().onComplete(p));
    return LoadGenerator.join(p.future(), seconds);
  }

  /** {@code /health} answers 200 and a real completion is served, each within 5 s. */
  private static boolean stillServing(HttpWork via) {
    try {
      if (via.getBlocking("/health", 5000).status() != 200) return false;
    } catch (RuntimeException e) {
      return false;
    }
    return serveOne(via);
  }

  private static boolean serveOne(HttpWork via) {
    try {
      Promise<Exchange> p = Promise.promise();
      Buffer body = Bodies.completion(2, false).toBuffer();
      via.vertxRun(() -> via.post(FuzzCases.C, body, false, 5000).onComplete(p));
      return LoadGenerator.join(p.future(), 10).ok();
    } catch (RuntimeException e) {
      return false;
    }
  }

  record CrowdResult(int connected, boolean served, long millis, String error) {
    String describe() {
      return connected + " connected, real request " + (served ? "served" : "NOT served") + (error == null ? "" : " (" + error + ")");
    }
  }

  /** Opens {@code n} connections that each send half a request line and stall, then asks for a real completion. */
  private static CrowdResult crowd(LoadGenerator load, NetClient net, int port, int n, HttpWork via) {
    List<NetSocket> sockets = new ArrayList<>();
    String error = null;
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      try {
        NetSocket s = onLoop(load, () -> net.connect(port, "127.0.0.1").compose(sock -> sock.write("POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Sta")
            .map(sock)), 10);
        sockets.add(s);
      } catch (RuntimeException e) {
        error = e.getMessage();
        break;
      }
    }
    boolean served = serveOne(via);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    for (NetSocket s : sockets) load.vertx().runOnContext(v -> s.close());
    return new CrowdResult(sockets.size(), served, ms, error);
  }
}
