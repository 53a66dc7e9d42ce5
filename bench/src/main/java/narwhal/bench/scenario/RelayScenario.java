package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.load.Work;
import narwhal.bench.probe.CpuMeter;
import narwhal.bench.probe.JitWarmup;
import narwhal.bench.probe.ProcessCpu;
import narwhal.bench.probe.Profiling;
import narwhal.bench.process.NginxProcess;
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
 * P2. Output tokens per second relayed to streaming clients, and the CPU each relayed token costs: through a router
 * replica (prefill on P0, decode on D0, every frame parsed and classified) versus through nginx proxying D0 directly
 * (parses nothing, buffering off, as many worker processes as the router has event loops). D0 emits tokens as fast
 * as its writes drain (zero inter-token latency), {@code ignore_eos} makes every stream the same length.
 */
public final class RelayScenario implements Scenario {
  static final int HEADLINE_LEVEL = 64;

  @Override
  public String name() {
    return "relay";
  }

  @Override
  public String summary() {
    return "P2: streamed output tokens/s through the router vs through nginx relaying the same decode streams";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    List<Integer> levels = env.options().levels(List.of(1, 16, 64), List.of(16));
    int tokens = smoke ? 64 : 256;
    double warm = smoke ? 0.3 : 2;
    double measure = smoke ? 1 : 6;
    int rounds = smoke ? 1 : 2;
    int maxLevel = levels.stream().max(Integer::compare).orElse(1);
    BenchReport report = env.report();
    Progress progress = env.progress();

    Path nginxBinary = NginxProcess.binary().orElseThrow(() -> new IllegalStateException(
        "nginx is not installed: the relay baseline needs it (apt-get install nginx-light)"));
    Path journal = env.tmp().resolve("journal.jsonl");
    env.own(() -> Files.deleteIfExists(journal));
    SimBench fleet = env.own(SimBench.start(List.of(SimBench.engine("P0", "prefill"), SimBench.engine("D0", "decode"))));
    JsonObject cfg = SimBench.unbalanced(fleet.fleetFile(journal, 0));
    SimBench.set(cfg, "serving", "max_in_flight", Math.max(768, maxLevel * 4));
    SimBench.set(cfg, "engine", "max_connections_per_engine", Math.max(768, maxLevel * 4));
    SimBench.set(cfg, "engine", "first_token_timeout_s", 10);
    progress.say("starting the router replica and nginx");
    RouterProcess router = env.own(RouterProcess.start(env, name(), cfg,
        new RouterProcess.Options(List.of("-Xmx1g"), false, env.options().profile())));
    int workers = env.options().effectiveRouterLoops();
    NginxProcess nginx = env.own(NginxProcess.start(nginxBinary, env.tmp().resolve("nginx"), fleet.engine("D0").port(), workers));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpClientAgent http = load.client(maxLevel + 64);
    HttpWork viaRouter = new HttpWork(load.vertx(), http, "127.0.0.1", router.port());
    HttpWork viaNginx = new HttpWork(load.vertx(), http, "127.0.0.1", nginx.port());
    Buffer body = Bodies.completion(tokens, true).toBuffer();
    Work routerWork = () -> viaRouter.post("/v1/completions", body, true, 60_000);
    Work nginxWork = () -> viaNginx.post("/v1/completions", body, true, 60_000);

    report.layout("bench process: load generator (Vert.x, 2 event loops) + simulated P0 (prefill) and D0 (decode, zero inter-token latency)")
        .layout("baseline: nginx " + nginxBinary + ", " + workers + " worker(s) (the router's event loops), proxy_buffering off, keep-alive upstream, proxying D0 on port " + nginx.port())
        .layout("router: one replica, its own JVM (-Xmx1g), pid " + router.pid() + ": prefill on P0, crossed decode on D0, relays every frame")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("levels", levels).parameter("tokens_per_stream", tokens).parameter("warmup_s", warm)
        .parameter("measure_s", measure).parameter("rounds", rounds).parameter("nginx_workers", workers);

    progress.say("warm-up: both paths until the JIT has settled");
    JitWarmup.Result jit = JitWarmup.run(load, progress, router, maxLevel, smoke ? 0.25 : 3, smoke ? 0.5 : 180,
        List.of(nginxWork, routerWork));
    report.layout(jit.describe());
    report.parameter("jit_warmup_s", jit.seconds());

    ResultTable table = new ResultTable("relayed output tokens per second (" + tokens + "-token streams, client-measured)",
        "streams", "nginx tok/s", "router tok/s", "router/nginx", "nginx ITL p99 ms", "router ITL p99 ms",
        "nginx first p50 ms", "router first p50 ms", "CPU µs/token nginx | router", "CPU router/nginx",
        "cores busy: bench+nginx | bench+router", "router CPU in JIT", "errors n/r");
    Map<String, Map<String, Double>> chart = new LinkedHashMap<>();
    List<JsonObject> raw = new ArrayList<>();
    int headlineLevel = levels.contains(HEADLINE_LEVEL) ? HEADLINE_LEVEL : maxLevel;
    double headlineRatio = Double.NaN;
    double headlineCpu = Double.NaN;
    String headline = "";
    long errors = 0;
    List<String> samples = new ArrayList<>();
    for (int c : levels) {
      RunStats n = new RunStats("nginx c=" + c);
      RunStats r = new RunStats("router c=" + c);
      CpuMeter nCpu = new CpuMeter().add("bench", ProcessCpu::self).add("nginx", nginx::cpuSeconds);
      CpuMeter rCpu = new CpuMeter().add("bench", ProcessCpu::self).router(router);
      for (int round = 0; round < rounds; round++) {
        boolean nginxFirst = round % 2 == 0;
        for (int k = 0; k < 2; k++) {
          boolean isNginx = (k == 0) == nginxFirst;
          progress.say(c + " streams: " + (isNginx ? "nginx" : "router") + " (round " + (round + 1) + "/" + rounds + ")");
          RunStats run = load.closedLoop(isNginx ? "nginx" : "router", c, warm, measure, 60, isNginx ? nginxWork : routerWork,
              isNginx ? nCpu : rCpu);
          (isNginx ? n : r).absorb(run);
        }
      }
      double ratio = Fmt.ratio(r.tokensPerSecond(), n.tokensPerSecond());
      double nPer = microsPerToken(nCpu.seconds("nginx"), n.tokens());
      double rPer = microsPerToken(rCpu.seconds("router"), r.tokens());
      double cpuRatio = Fmt.ratio(rPer, nPer);
      table.row(c, Fmt.rate(n.tokensPerSecond()), Fmt.rate(r.tokensPerSecond()), Fmt.ratio(ratio),
          Fmt.pct(n.itl(), 99), Fmt.pct(r.itl(), 99), Fmt.pct(n.firstToken(), 50),
          Fmt.pct(r.firstToken(), 50), Fmt.num(nPer, 2) + " | " + Fmt.num(rPer, 2), Fmt.ratio(cpuRatio),
          Fmt.num(nCpu.cores("bench"), 2) + "+" + Fmt.num(nCpu.cores("nginx"), 2) + " | "
              + Fmt.num(rCpu.cores("bench"), 2) + "+" + Fmt.num(rCpu.cores("router"), 2),
          Fmt.percent(rCpu.share("router-jit", "router"), 1), n.errors() + "/" + r.errors());
      chart.computeIfAbsent("nginx", k -> new LinkedHashMap<>()).put(String.valueOf(c), n.tokensPerSecond());
      chart.computeIfAbsent("router", k -> new LinkedHashMap<>()).put(String.valueOf(c), r.tokensPerSecond());
      raw.add(new JsonObject().put("streams", c).put("nginx", n.toJson()).put("router", r.toJson())
          .put("cpu_us_per_token", new JsonObject().put("nginx", nPer).put("router", rPer))
          .put("cpu_s", new JsonObject().put("nginx", nCpu.seconds("nginx")).put("router", rCpu.seconds("router"))
              .put("router_jit", rCpu.seconds("router-jit"))
              .put("bench_nginx_runs", nCpu.seconds("bench")).put("bench_router_runs", rCpu.seconds("bench"))));
      errors += n.errors() + r.errors();
      samples.addAll(r.errorSamples());
      samples.addAll(n.errorSamples());
      if (c == headlineLevel) {
        headlineRatio = ratio;
        headlineCpu = cpuRatio;
        headline = " at " + c + " streams (" + Fmt.rate(r.tokensPerSecond()) + " / " + Fmt.rate(n.tokensPerSecond()) + " tok/s)";
      }
    }
    report.raw("levels", raw);
    report.table(table);
    report.verdict(Verdict.perf("P2", "CPU per relayed token, router / nginx" + headline, Fmt.ratio(headlineCpu), "≤ 2.50×",
        headlineCpu <= 2.5));
    report.verdict(Verdict.perf("P2", "relayed tokens/s, router / nginx" + headline, Fmt.ratio(headlineRatio), "≥ 0.60×",
        headlineRatio >= 0.6));
    if (errors > 0) report.note(errors + " stream(s) failed; first ones: " + samples.subList(0, Math.min(4, samples.size())));
    report.chart(ChartWriter.bars(env.out().resolve(name() + (smoke ? "-smoke" : "") + "-tokens.png"),
        "Relayed output tokens per second (" + tokens + "-token streams)", "concurrent streams", "tokens/s", chart));
    Profiling.summarize(env, router);
  }

  private static double microsPerToken(double cpuSeconds, long tokens) {
    return tokens == 0 ? Double.NaN : cpuSeconds / tokens * 1e6;
  }
}
