package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.DirectTwoLegClient;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.load.Work;
import narwhal.bench.probe.CpuMeter;
import narwhal.bench.probe.JitWarmup;
import narwhal.bench.probe.ProcessCpu;
import narwhal.bench.probe.Profiling;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.ChartWriter;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * P1 and P4. The same simulated fleet (2 producers, 2 consumers, zero latency) is driven two ways at each
 * concurrency level: through a router replica (its own process), and by a client that runs the two legs
 * itself with {@code EngineClient} — the baseline. Streaming requests give the first-byte time the client sees
 * (the router's overhead is the difference of the two distributions' percentiles); short non-streaming
 * requests give requests per second. Rounds alternate the order (A B, then B A) so drift hits both paths.
 */
public final class OverheadScenario implements Scenario {
  static final int STREAM_TOKENS = 16;
  static final int SHORT_TOKENS = 8;
  static final int HEADLINE_LEVEL = 64;
  static final int PACED_TOKENS = 32;
  static final int PACED_ITL_MS = 10;

  @Override
  public String name() {
    return "overhead";
  }

  @Override
  public String summary() {
    return "P1, P4: first-byte overhead and requests/s, router vs a client running both legs itself";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    List<Integer> levels = env.options().levels(List.of(1, 16, 64, 256), List.of(1, 16));
    double warm = smoke ? 0.3 : 2;
    double measure = smoke ? 0.7 : 5;
    int rounds = smoke ? 1 : 2;
    int maxLevel = levels.stream().max(Integer::compare).orElse(1);
    BenchReport report = env.report();
    Progress progress = env.progress();

    Path journal = env.tmp().resolve("journal.jsonl");
    env.own(() -> Files.deleteIfExists(journal));
    SimBench fleet = env.own(SimBench.start(List.of(SimBench.engine("P0", "prefill"), SimBench.engine("P1", "prefill"),
        SimBench.engine("D0", "decode"), SimBench.engine("D1", "decode"))));
    JsonObject cfg = SimBench.unbalanced(fleet.fleetFile(journal, 0));
    SimBench.set(cfg, "serving", "max_in_flight", Math.max(768, maxLevel * 4));
    SimBench.set(cfg, "engine", "max_connections_per_engine", Math.max(768, maxLevel * 4));
    SimBench.set(cfg, "engine", "first_token_timeout_s", 10);
    progress.say("starting the router replica");
    RouterProcess router = env.own(RouterProcess.start(env, name(), cfg,
        new RouterProcess.Options(List.of("-Xmx1g"), false, env.options().profile())));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpClientAgent http = load.client(maxLevel + 64);
    HttpWork routerHttp = new HttpWork(load.vertx(), http, "127.0.0.1", router.port());
    DirectTwoLegClient direct = env.own(new DirectTwoLegClient(load.vertx(), fleet.urls("prefill"), fleet.urls("decode"),
        SimBench.MODEL, maxLevel + 64));

    JsonObject streamJson = Bodies.completion(STREAM_TOKENS, true);
    JsonObject shortJson = Bodies.completion(SHORT_TOKENS, false);
    Buffer streamBody = streamJson.toBuffer();
    Buffer shortBody = shortJson.toBuffer();
    Work routerStream = () -> routerHttp.post("/v1/completions", streamBody, true, 30_000);
    Work directStream = () -> direct.run("/v1/completions", streamJson, true);
    Work routerShort = () -> routerHttp.post("/v1/completions", shortBody, false, 30_000);
    Work directShort = () -> direct.run("/v1/completions", shortJson, false);
    JsonObject pacedJson = Bodies.completion(PACED_TOKENS, true).put("sim_fault", "slow_tokens;itl_ms=" + PACED_ITL_MS + ";phase=decode");
    Buffer pacedBody = pacedJson.toBuffer();
    Work routerPaced = () -> routerHttp.post("/v1/completions", pacedBody, true, 30_000);
    Work directPaced = () -> direct.run("/v1/completions", pacedJson, true);

    report.layout("bench process: load generator (Vert.x, 2 event loops) + 4 simulated engines (P0 P1 prefill, D0 D1 decode, zero latency, own Vert.x)")
        .layout("baseline: the same bench process runs both legs itself with narwhal.engines.client.EngineClient (prefill -> decode, round-robin)")
        .layout("router: one replica, its own JVM (java -Xmx1g -jar narwhal.jar serve), pid " + router.pid() + ", port " + router.port())
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("levels", levels).parameter("warmup_s", warm).parameter("measure_s", measure).parameter("rounds", rounds)
        .parameter("stream_tokens", STREAM_TOKENS).parameter("short_tokens", SHORT_TOKENS);

    progress.say("warm-up: both paths until the JIT has settled, " + maxLevel + " streams");
    JitWarmup.Result jit = JitWarmup.run(load, progress, router, maxLevel, smoke ? 0.15 : 2, smoke ? 0.6 : 240,
        List.of(directStream, routerStream, directShort, routerShort, directPaced, routerPaced));
    report.layout(jit.describe());
    report.parameter("jit_warmup_s", jit.seconds());

    ResultTable first = new ResultTable("first byte, streaming completions (" + STREAM_TOKENS
        + " tokens); client-measured ms; added = router − direct", "streams", "direct p50", "router p50", "added p50",
        "direct p99", "router p99", "added p99", "direct req/s", "router req/s", "CPU ms/req: direct | bench+router",
        "errors d/r");
    ResultTable shortT = new ResultTable("short non-streaming completions (" + SHORT_TOKENS + " tokens), requests per second",
        "streams", "direct req/s", "router req/s", "router/direct", "direct p50 ms", "router p50 ms", "direct p99 ms",
        "router p99 ms", "CPU ms/req: direct | bench+router", "cores busy: direct | bench+router", "router CPU in JIT", "errors d/r");
    Map<String, Map<String, Double>> fbChart = new LinkedHashMap<>();
    Map<String, Map<String, Double>> rpsChart = new LinkedHashMap<>();
    List<JsonObject> raw = new ArrayList<>();
    Map<Integer, Pair> streamAt = new LinkedHashMap<>();
    Map<Integer, Pair> shortAt = new LinkedHashMap<>();

    for (int c : levels) {
      Pair s = measurePair(load, progress, "stream", c, rounds, warm, measure, directStream, routerStream, router);
      Pair n = measurePair(load, progress, "short", c, rounds, warm, measure, directShort, routerShort, router);
      streamAt.put(c, s);
      shortAt.put(c, n);
      RunStats d = s.direct();
      RunStats r = s.router();
      RunStats nd = n.direct();
      RunStats nr = n.router();
      long addedP50 = r.firstToken().percentile(50) - d.firstToken().percentile(50);
      long addedP99 = r.firstToken().percentile(99) - d.firstToken().percentile(99);
      boolean both = d.firstToken().count() > 0 && r.firstToken().count() > 0;
      first.row(c, Fmt.pct(d.firstToken(), 50), Fmt.pct(r.firstToken(), 50), both ? Fmt.deltaMs(addedP50) : "—",
          Fmt.pct(d.firstToken(), 99), Fmt.pct(r.firstToken(), 99), both ? Fmt.deltaMs(addedP99) : "—",
          Fmt.rate(d.rps()), Fmt.rate(r.rps()), s.cpuPerRequest(), d.errors() + "/" + r.errors());
      shortT.row(c, Fmt.rate(nd.rps()), Fmt.rate(nr.rps()), Fmt.ratio(Fmt.ratio(nr.rps(), nd.rps())),
          Fmt.pct(nd.latency(), 50), Fmt.pct(nr.latency(), 50), Fmt.pct(nd.latency(), 99), Fmt.pct(nr.latency(), 99), n.cpuPerRequest(), n.cores(),
          n.jitShare(), nd.errors() + "/" + nr.errors());
      String cat = String.valueOf(c);
      fbChart.computeIfAbsent("direct p50", k -> new LinkedHashMap<>()).put(cat, d.firstToken().percentileMs(50));
      fbChart.computeIfAbsent("router p50", k -> new LinkedHashMap<>()).put(cat, r.firstToken().percentileMs(50));
      fbChart.computeIfAbsent("direct p99", k -> new LinkedHashMap<>()).put(cat, d.firstToken().percentileMs(99));
      fbChart.computeIfAbsent("router p99", k -> new LinkedHashMap<>()).put(cat, r.firstToken().percentileMs(99));
      rpsChart.computeIfAbsent("direct two-leg client", k -> new LinkedHashMap<>()).put(cat, nd.rps());
      rpsChart.computeIfAbsent("router", k -> new LinkedHashMap<>()).put(cat, nr.rps());
      raw.add(new JsonObject().put("streams", c).put("stream_direct", d.toJson()).put("stream_router", r.toJson())
          .put("short_direct", nd.toJson()).put("short_router", nr.toJson())
          .put("router_cpu_ms_per_req_stream", s.routerCpuMsPerRequest()).put("router_cpu_ms_per_req_short", n.routerCpuMsPerRequest())
          .put("router_jit_cpu_s_short", n.routerJitS()));
    }
    report.raw("levels", raw);
    report.table(first);
    report.table(shortT);

    // P1 "at 64 concurrent streams" without saturation: zero time to first token, but each stream then lasts
    // PACED_TOKENS × PACED_ITL_MS (the engine's per-request slow_tokens rule, decode leg only), so 64 open streams
    // ask for a fraction of what either path can serve and the difference is the router's own work.
    int pacedLevel = levels.contains(HEADLINE_LEVEL) ? HEADLINE_LEVEL : maxLevel;
    Pair paced = measurePair(load, progress, "paced stream", pacedLevel, rounds, warm, measure, directPaced, routerPaced, router);
    ResultTable pacedT = new ResultTable("first byte, " + pacedLevel + " open streams below saturation (zero TTFT, then " + PACED_TOKENS
        + " tokens " + PACED_ITL_MS + " ms apart); client-measured ms", "streams", "direct p50", "router p50", "added p50",
        "direct p99", "router p99", "added p99", "direct req/s", "router req/s", "CPU ms/req: direct | bench+router", "errors d/r");
    long pacedP50 = paced.router().firstToken().percentile(50) - paced.direct().firstToken().percentile(50);
    long pacedP99 = paced.router().firstToken().percentile(99) - paced.direct().firstToken().percentile(99);
    boolean pacedData = paced.router().firstToken().count() > 0 && paced.direct().firstToken().count() > 0;
    pacedT.row(pacedLevel, Fmt.pct(paced.direct().firstToken(), 50), Fmt.pct(paced.router().firstToken(), 50),
        pacedData ? Fmt.deltaMs(pacedP50) : "—", Fmt.pct(paced.direct().firstToken(), 99), Fmt.pct(paced.router().firstToken(), 99),
        pacedData ? Fmt.deltaMs(pacedP99) : "—", Fmt.rate(paced.direct().rps()), Fmt.rate(paced.router().rps()),
        paced.cpuPerRequest(), paced.direct().errors() + "/" + paced.router().errors());
    report.table(pacedT);
    report.raw("paced", new JsonObject().put("streams", pacedLevel).put("direct", paced.direct().toJson())
        .put("router", paced.router().toJson()).put("router_cpu_ms_per_req", paced.routerCpuMsPerRequest()));

    int headline = streamAt.containsKey(HEADLINE_LEVEL) ? HEADLINE_LEVEL : levels.get(levels.size() - 1);
    String at = " at " + headline + " streams";
    Pair s = streamAt.get(headline);
    boolean data = s.router().firstToken().count() > 0 && s.direct().firstToken().count() > 0;
    long p50 = s.router().firstToken().percentile(50) - s.direct().firstToken().percentile(50);
    long p99 = s.router().firstToken().percentile(99) - s.direct().firstToken().percentile(99);
    String pacedAt = " at " + pacedLevel + " streams, below saturation";
    report.verdict(Verdict.perf("P1", "first-byte overhead p50" + pacedAt, pacedData ? Fmt.deltaMs(pacedP50) + " ms" : "no data",
        "≤ 1 ms", pacedData && pacedP50 <= 1_000_000));
    report.verdict(Verdict.perf("P1", "first-byte overhead p99" + pacedAt, pacedData ? Fmt.deltaMs(pacedP99) + " ms" : "no data",
        "≤ 5 ms", pacedData && pacedP99 <= 5_000_000));
    report.verdict(Verdict.perf("P1", "first-byte overhead p50" + at + ", saturating closed loop", data ? Fmt.deltaMs(p50) + " ms" : "no data",
        "≤ 1 ms", data && p50 <= 1_000_000));
    report.verdict(Verdict.perf("P1", "first-byte overhead p99" + at + ", saturating closed loop", data ? Fmt.deltaMs(p99) + " ms" : "no data",
        "≤ 5 ms", data && p99 <= 5_000_000));
    Pair n = shortAt.get(headline);
    double ratio = Fmt.ratio(n.router().rps(), n.direct().rps());
    report.verdict(Verdict.perf("P4", "non-streaming req/s, router / direct" + at, Fmt.ratio(ratio) + " (" + Fmt.rate(n.router().rps())
        + " / " + Fmt.rate(n.direct().rps()) + ")", "≥ 0.70×", ratio >= 0.7));
    double cpuMs = n.routerCpuMsPerRequest();
    report.verdict(Verdict.perf("P4", "router CPU per short non-streaming request" + at, Fmt.num(cpuMs, 3) + " ms", "≤ 0.15 ms",
        cpuMs <= 0.15));
    long errors = 0;
    List<String> samples = new ArrayList<>();
    for (Pair p : List.copyOf(streamAt.values())) {
      errors += p.router().errors() + p.direct().errors();
      samples.addAll(p.router().errorSamples());
      samples.addAll(p.direct().errorSamples());
    }
    for (Pair p : List.copyOf(shortAt.values())) {
      errors += p.router().errors() + p.direct().errors();
      samples.addAll(p.router().errorSamples());
      samples.addAll(p.direct().errorSamples());
    }
    if (errors > 0) report.note(errors + " request(s) failed; first ones: " + samples.subList(0, Math.min(4, samples.size())));

    report.chart(ChartWriter.categoryLines(env.out().resolve(name() + (smoke ? "-smoke" : "") + "-first-byte.png"),
        "First byte, streaming (client-measured)", "concurrent streams", "ms", fbChart));
    report.chart(ChartWriter.bars(env.out().resolve(name() + (smoke ? "-smoke" : "") + "-rps.png"),
        "Short non-streaming requests per second", "concurrent streams", "requests/s", rpsChart));
    if (paced.router().errors() + paced.direct().errors() > 0) {
      report.note("paced streams failed: " + paced.router().errorSamples() + " " + paced.direct().errorSamples());
    }
    Profiling.summarize(env, router);
  }

  /**
   * Both paths at one level: the direct client's stats, the router's, and CPU inside the measured windows —
   * the router's CPU seconds, and cores busy in each process during each path's windows.
   */
  record Pair(RunStats direct, RunStats router, double routerCpuS, double benchCoresDirect, double benchCoresRouted,
              double routerCores, double benchCpuDirectS, double benchCpuRoutedS, double routerJitS) {
    double routerCpuMsPerRequest() {
      return router.completed() == 0 ? Double.NaN : routerCpuS * 1000 / router.completed();
    }

    /** The part of the router's CPU its JIT compilers used in the measured windows. */
    String jitShare() {
      return Fmt.percent(routerJitS / routerCpuS, 1);
    }

    /** CPU per completed request of each process: the bench process alone on the direct path | bench + router. */
    String cpuPerRequest() {
      double d = direct.completed() == 0 ? Double.NaN : benchCpuDirectS * 1000 / direct.completed();
      double b = router.completed() == 0 ? Double.NaN : benchCpuRoutedS * 1000 / router.completed();
      return Fmt.num(d, 3) + " | " + Fmt.num(b, 3) + "+" + Fmt.num(routerCpuMsPerRequest(), 3);
    }

    String cores() {
      return Fmt.num(benchCoresDirect, 2) + " | " + Fmt.num(benchCoresRouted, 2) + "+" + Fmt.num(routerCores, 2);
    }
  }

  /** Runs direct and router at one level for {@code rounds} rounds, alternating which goes first. */
  private static Pair measurePair(LoadGenerator load, Progress progress, String mode, int c, int rounds, double warm,
                                  double measure, Work direct, Work routed, RouterProcess router) {
    RunStats d = new RunStats("direct " + mode + " c=" + c);
    RunStats r = new RunStats("router " + mode + " c=" + c);
    CpuMeter directCpu = new CpuMeter().add("bench", ProcessCpu::self);
    CpuMeter routedCpu = new CpuMeter().add("bench", ProcessCpu::self).router(router);
    for (int round = 0; round < rounds; round++) {
      boolean directFirst = round % 2 == 0;
      for (int k = 0; k < 2; k++) {
        boolean isDirect = (k == 0) == directFirst;
        progress.say(mode + ", " + c + " streams: " + (isDirect ? "direct" : "router") + " (round " + (round + 1) + "/" + rounds + ")");
        RunStats run = load.closedLoop(isDirect ? "direct" : "router", c, warm, measure, 30, isDirect ? direct : routed,
            isDirect ? directCpu : routedCpu);
        (isDirect ? d : r).absorb(run);
      }
    }
    return new Pair(d, r, routedCpu.seconds("router"), directCpu.cores("bench"), routedCpu.cores("bench"), routedCpu.cores("router"),
        directCpu.seconds("bench"), routedCpu.seconds("bench"), routedCpu.seconds("router-jit"));
  }
}
