package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.DirectTwoLegClient;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.load.Work;
import narwhal.bench.probe.CpuMeter;
import narwhal.bench.probe.HeapSampler;
import narwhal.bench.probe.ProcessCpu;
import narwhal.bench.probe.Profiling;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.process.SimProcess;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.ChartWriter;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * P3. Ramps to N (9,000: a process here may open 20,000 files, and a stream holds two) concurrently open streams
 * through one router replica with a 1 GiB heap cap, and reports the heap each open stream costs: the
 * decode engines emit one token per second ({@code itl}), so every stream stays open for the whole ramp and a
 * hold after it. Counts errors of every kind, samples the router's heap each second over JMX, and times every
 * token gap. The same ramp run by a client that makes both legs itself (EngineClient, no router) is the baseline,
 * so what the router adds is told apart from what the engines and the loaded machine add.
 */
public final class ConcurrencyScenario implements Scenario {
  static final long HEAP_LIMIT = 1L << 30;
  /** P3: the router's live heap at the peak, per stream open then. */
  static final long HEAP_PER_STREAM_LIMIT = 64 * 1024;

  @Override
  public String name() {
    return "concurrency";
  }

  @Override
  public String summary() {
    return "P3: ramp to 9,000 open streams on one replica; heap per open stream, errors, inter-token delay added";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    int total = env.options().levels(List.of(9_000), List.of(200)).get(0);
    double rate = smoke ? 400 : 500;
    int itlMs = smoke ? 100 : 1000;
    int tokens = smoke ? 20 : 60;
    double streamS = tokens * itlMs / 1000.0;
    double rampS = total / rate;
    double maxS = rampS + streamS + 60;
    BenchReport report = env.report();
    Progress progress = env.progress();

    String limit = raiseFileLimit(total * 2 + 10_000);
    report.note("open files per process: " + limit);
    long fdLimit = fileLimit();
    long routerNeeds = 2L * total + 200;
    if (fdLimit > 0 && routerNeeds > fdLimit) {
      report.note("the router needs about " + routerNeeds + " descriptors for " + total + " streams (one socket to the client and one"
          + " to the decode engine per stream, HTTP/1.1, plus ~200 of its own) but a process here may open " + fdLimit
          + ", and the limit cannot be raised: streams beyond about " + (fdLimit - 200) / 2 + " will fail for that reason");
    }
    Path journal = env.tmp().resolve("journal.jsonl");
    Files.deleteIfExists(journal); // kept after the run, beside the router log, for a closer look
    SimProcess fleet = env.own(SimProcess.start(env, name(), List.of(SimBench.engine("P0", "prefill"),
        SimBench.engine("D0", "decode").setItlMs(itlMs), SimBench.engine("D1", "decode").setItlMs(itlMs)), "2g"));
    JsonObject cfg = SimBench.unbalanced(fleet.fleetFile(journal, 0));
    SimBench.set(cfg, "serving", "max_in_flight", Math.max(768, total * 2));
    SimBench.set(cfg, "engine", "max_connections_per_engine", Math.max(768, total * 2));
    SimBench.set(cfg, "serving", "prefill_timeout_s", 60);
    SimBench.set(cfg, "engine", "first_token_timeout_s", 30);
    SimBench.set(cfg, "engine", "decode_read_timeout_s", Math.max(10, 3 * itlMs / 1000.0));
    progress.say("starting the router replica (-Xmx1g, JMX for heap readings)");
    RouterProcess router = env.own(RouterProcess.start(env, name(), cfg,
        new RouterProcess.Options(List.of("-Xmx1g"), true, env.options().profile())));
    LoadGenerator load = env.own(new LoadGenerator());
    // One client per phase, closed after it: its pooled connections would otherwise count against this process's
    // open-file limit during the next phase.
    HttpClientAgent http = load.client(total + 100);
    HttpWork viaRouter = new HttpWork(load.vertx(), http, "127.0.0.1", router.port());
    JsonObject json = Bodies.completion(tokens, true);
    Buffer body = json.toBuffer();
    long timeoutMs = (long) ((streamS + rampS + 60) * 1000);
    List<long[]> routerStreaming = java.util.Collections.synchronizedList(new ArrayList<>());
    List<long[]> directStreaming = java.util.Collections.synchronizedList(new ArrayList<>());
    Work routerWork = () -> viaRouter.post("/v1/completions", body, true, timeoutMs).onSuccess(e -> streaming(routerStreaming, e));

    report.layout("bench process: load generator (Vert.x, 2 event loops, one connection per stream)")
        .layout("engine process (own JVM, -Xmx2g): simulated P0 (prefill), D0 D1 (decode, " + itlMs + " ms between tokens)")
        .layout("router: one replica, its own JVM with -Xmx1g (the P3 budget), pid " + router.pid() + "; heap read over JMX every second")
        .layout("baseline: the same ramp with no router: a client in the bench process runs prefill and decode itself (EngineClient)")
        .layout("order: engine warm-up ramp (no router, short streams), router warm-up, router ramp, then the baseline ramp")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("streams", total).parameter("ramp_per_s", rate).parameter("itl_ms", itlMs).parameter("tokens_per_stream", tokens)
        .parameter("router_heap_cap", "1 GiB");

    // The engine process is warmed first, by the same kind of ramp with no router, so that whichever path runs first
    // does not pay the engines' JIT and heap growth; then a short warm-up of the router itself.
    int warmStreams = Math.min(total, 2_000);
    progress.say("warming the engines: " + warmStreams + " short streams at " + (int) rate + "/s, no router");
    try (DirectTwoLegClient warm = new DirectTwoLegClient(load.vertx(), fleet.urls("prefill"), fleet.urls("decode"), SimBench.MODEL,
        warmStreams + 100)) {
      JsonObject shortStream = Bodies.completion(2, true);
      load.ramp("engine warm-up", warmStreams, rate, warmStreams / rate + 60, () -> warm.run("/v1/completions", shortStream, true),
          new AtomicInteger(), new AtomicLong());
    }
    // A short warm-up so the router's first requests do not pay class loading inside the ramp.
    load.closedLoop("warm-up", 8, 0, smoke ? 0.3 : 2, 30, () -> viaRouter.post("/v1/completions", Bodies.completion(2, true).toBuffer(), true, 30_000));

    HeapSampler sampler = new HeapSampler(router.probe());
    AtomicInteger open = new AtomicInteger();
    AtomicLong peak = new AtomicLong();
    progress.say("router: opening " + total + " streams at " + (int) rate + "/s, each " + tokens + " tokens " + itlMs + " ms apart");
    CpuMeter routerCpu = new CpuMeter().add("bench", ProcessCpu::self).add("engines", fleet::cpuSeconds).add("router", router::cpuSeconds);
    routerCpu.opened();
    RunStats routed;
    try (Progress.Ticker t = progress.every(smoke ? 1000 : 5000, () -> "router: " + open.get() + " open (peak " + peak.get()
        + "), heap " + Fmt.mib(sampler.lastUsed()) + " MiB, after last GC " + Fmt.mib(sampler.lastAfterGc()) + " MiB")) {
      sampler.start(open::get);
      routed = load.ramp("router", total, rate, maxS, routerWork, open, peak);
      sampler.stop();
    }
    routerCpu.closed();
    long routedPeak = peak.get();
    int stillOpen = open.get();
    LoadGenerator.join(http.close(), 60);
    ResultTable timings = routerTimings(journal, total);
    progress.say("baseline: the same ramp, both legs run by a client with EngineClient (no router)");
    DirectTwoLegClient direct = new DirectTwoLegClient(load.vertx(), fleet.urls("prefill"), fleet.urls("decode"), SimBench.MODEL,
        total + 100);
    Work directWork = () -> direct.run("/v1/completions", json, true).onSuccess(e -> streaming(directStreaming, e));
    open.set(0);
    peak.set(0);
    List<double[]> directOpen = java.util.Collections.synchronizedList(new ArrayList<>());
    CpuMeter directCpu = new CpuMeter().add("bench", ProcessCpu::self).add("engines", fleet::cpuSeconds);
    directCpu.opened();
    RunStats baseline;
    ScheduledExecutorService tracker = Executors.newSingleThreadScheduledExecutor();
    long t0 = System.nanoTime();
    tracker.scheduleAtFixedRate(() -> directOpen.add(new double[] {(System.nanoTime() - t0) / 1e9, open.get()}), 0, 1, TimeUnit.SECONDS);
    try (Progress.Ticker t = progress.every(smoke ? 1000 : 5000, () -> "baseline: " + open.get() + " open (peak " + peak.get() + ")")) {
      baseline = load.ramp("direct", total, rate, maxS, directWork, open, peak);
    } finally {
      tracker.shutdownNow();
    }
    directCpu.closed();
    long directPeak = peak.get();
    direct.close();

    long itl = itlMs * 1_000_000L;
    ResultTable table = new ResultTable(total + " streams ramped at " + (int) rate + "/s, " + tokens + " tokens each, " + itlMs
        + " ms apart (client-measured)", "path", "peak open", "peak streaming", "ok", "errors", "first p50 ms", "first p99 ms", "ITL p50 ms",
        "ITL p99 ms", "ITL max ms", "added p99 ms", "heap peak MiB", "heap after GC max MiB");
    long directStreamingPeak = peakOverlap(directStreaming);
    long routerStreamingPeak = peakOverlap(routerStreaming);
    table.row("direct two-leg client", directPeak, directStreamingPeak, baseline.ok(), baseline.errors(), Fmt.pct(baseline.firstToken(), 50),
        Fmt.pct(baseline.firstToken(), 99), Fmt.pct(baseline.itl(), 50), Fmt.pct(baseline.itl(), 99),
        Fmt.ms(baseline.itl().max()), Fmt.deltaMs(baseline.itl().percentile(99) - itl), "—", "—");
    table.row("router", routedPeak, routerStreamingPeak, routed.ok(), routed.errors(), Fmt.pct(routed.firstToken(), 50),
        Fmt.pct(routed.firstToken(), 99), Fmt.pct(routed.itl(), 50), Fmt.pct(routed.itl(), 99),
        Fmt.ms(routed.itl().max()), Fmt.deltaMs(routed.itl().percentile(99) - itl), Fmt.mib(sampler.peakUsed()),
        Fmt.mib(sampler.peakAfterGc()));
    report.table(table);
    report.table(timings);
    ResultTable cpu = new ResultTable("CPU used by each process over each ramp (to its last stream's end), seconds; the machine has 2 cores",
        "path", "bench (client)", "engines", "router", "all", "all per stream ms");
    double routerAll = routerCpu.seconds("bench") + routerCpu.seconds("engines") + routerCpu.seconds("router");
    double directAll = directCpu.seconds("bench") + directCpu.seconds("engines");
    cpu.row("direct two-leg client", Fmt.num(directCpu.seconds("bench"), 1), Fmt.num(directCpu.seconds("engines"), 1), "—",
        Fmt.num(directAll, 1), Fmt.num(directAll * 1000 / total, 2));
    cpu.row("router", Fmt.num(routerCpu.seconds("bench"), 1), Fmt.num(routerCpu.seconds("engines"), 1),
        Fmt.num(routerCpu.seconds("router"), 1), Fmt.num(routerAll, 1), Fmt.num(routerAll * 1000 / total, 2));
    report.table(cpu);
    long routerAdded = routed.itl().percentile(99) - baseline.itl().percentile(99);
    report.verdict(Verdict.perf("P3", "streams open at once through one replica, each past its first token (in flight: "
        + routedPeak + ")", String.valueOf(routerStreamingPeak), "≥ " + total, routerStreamingPeak >= total));
    report.verdict(Verdict.perf("P3", "errors", routed.errors() + (routed.errors() > 0 ? " " + outcomes(routed) : ""), "0",
        routed.errors() == 0 && stillOpen == 0));
    report.verdict(Verdict.perf("P3", "router heap in use, peak (after-GC peak " + Fmt.mib(sampler.peakAfterGc()) + " MiB)",
        Fmt.mib(sampler.peakUsed()) + " MiB", "≤ 1024 MiB", sampler.peakUsed() >= 0 && sampler.peakUsed() <= HEAP_LIMIT && router.alive()));
    // live heap (after the last collection) at its peak, idle heap included, over the streams open at once
    double perStream = routerStreamingPeak == 0 || sampler.peakAfterGc() < 0 ? Double.NaN
        : (double) sampler.peakAfterGc() / routerStreamingPeak;
    report.verdict(Verdict.perf("P3", "router live heap per open stream (after-GC peak / peak streaming)",
        Fmt.num(perStream / 1024, 1) + " KiB", "≤ 64 KiB", perStream <= HEAP_PER_STREAM_LIMIT));
    report.verdict(Verdict.info("P3", "inter-token delay p99 added by the router (router − direct)", Fmt.deltaMs(routerAdded) + " ms"));
    if (routed.errors() > 0) report.note("router errors " + outcomes(routed) + ": " + routed.errorSamples());
    if (baseline.errors() > 0) report.note("baseline errors: " + baseline.errorSamples());
    if (stillOpen > 0) report.note(stillOpen + " stream(s) through the router had not ended when the run gave up");
    if (!router.alive()) report.note("the router process died: " + router.tail());

    Map<String, List<double[]>> opens = new LinkedHashMap<>();
    opens.put("open streams, router", sampler.series(0));
    opens.put("open streams, direct two-leg client", List.copyOf(directOpen));
    Map<String, List<double[]>> heap = new LinkedHashMap<>();
    heap.put("router heap in use (MiB)", sampler.series(1));
    heap.put("router heap after last GC (MiB)", sampler.series(2));
    report.chart(ChartWriter.timeSeries(env.out().resolve(name() + (smoke ? "-smoke" : "") + ".png"),
        "Ramp to " + total + " open streams", "seconds", List.of(new ChartWriter.Panel("open streams", opens),
            new ChartWriter.Panel("MiB", heap))));
    report.raw("router", routed.toJson()).raw("direct", baseline.toJson()).raw("samples", sampler.toJson());
    Profiling.summarize(env, router);
  }

  /**
   * The router's own view, from its journal: time from a request's arrival at the router to the end of its prefill
   * leg ({@code ttft_s}) and to the first output it read ({@code first_byte_s}). Set beside the client's first-token
   * time, it tells a wait before the router saw the request from one inside the router.
   */
  static ResultTable routerTimings(Path journal, int total) throws IOException {
    LatencyHistogram ttft = new LatencyHistogram();
    LatencyHistogram firstByte = new LatencyHistogram();
    java.util.Map<String, Long> terminals = new java.util.TreeMap<>();
    for (JsonObject row : SoakScenario.readJournal(journal, total, 5000)) {
      if (!row.containsKey("rid")) continue;
      terminals.merge(String.valueOf(row.getValue("terminal")), 1L, Long::sum);
      if (row.getValue("ttft_s") instanceof Number n) ttft.record((long) (n.doubleValue() * 1e9));
      if (row.getValue("first_byte_s") instanceof Number n) firstByte.record((long) (n.doubleValue() * 1e9));
    }
    ResultTable t = new ResultTable("the router's own timings (journal: from arrival at the router)", "journal rows", "ttft_s p50 ms",
        "ttft_s p99 ms", "first_byte_s p50 ms", "first_byte_s p99 ms", "terminals");
    t.row(ttft.count() + firstByte.count() == 0 ? 0 : terminals.values().stream().mapToLong(Long::longValue).sum(),
        Fmt.pct(ttft, 50), Fmt.pct(ttft, 99), Fmt.pct(firstByte, 50), Fmt.pct(firstByte, 99), terminals.toString());
    return t;
  }

  /** Records when a successful stream was streaming: from its first token to its end. */
  private static void streaming(List<long[]> intervals, Exchange e) {
    if (e.ok() && e.firstToken() >= 0) intervals.add(new long[] {e.startNanos() + e.firstToken(), e.endNanos()});
  }

  /** The most intervals that overlap at one instant. */
  static long peakOverlap(List<long[]> intervals) {
    List<long[]> events = new ArrayList<>();
    synchronized (intervals) {
      for (long[] i : intervals) {
        events.add(new long[] {i[0], 1});
        events.add(new long[] {i[1], -1});
      }
    }
    events.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
    long now = 0;
    long peak = 0;
    for (long[] e : events) {
      now += e[1];
      peak = Math.max(peak, now);
    }
    return peak;
  }

  private static String outcomes(RunStats s) {
    JsonObject o = s.toJson();
    return o.getJsonObject("outcomes").encode() + " " + o.getJsonObject("statuses").encode();
  }

  /**
   * Lifts this process's open-file limit (and so the router's, started after) with {@code prlimit}: 10,000
   * streams need a socket each at the client, the router (twice) and the engine. Says what the limit is.
   */
  static String raiseFileLimit(int wanted) {
    long pid = ProcessHandle.current().pid();
    try {
      Process p = new ProcessBuilder("prlimit", "--pid", String.valueOf(pid), "--nofile=" + wanted + ":" + wanted)
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes()).strip();
      p.waitFor(10, TimeUnit.SECONDS);
      String now = currentLimit();
      return p.exitValue() == 0 ? "raised to " + now : "could not raise (" + out + "); limit " + now;
    } catch (IOException e) {
      return "prlimit unavailable (" + e.getMessage() + "); limit " + currentLimit();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /** This process's soft limit on open files (children inherit it), or -1. */
  static long fileLimit() {
    String[] f = currentLimit().split(" ");
    try {
      return Long.parseLong(f[0]);
    } catch (RuntimeException e) {
      return -1;
    }
  }

  private static String currentLimit() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
        if (line.startsWith("Max open files")) return line.replaceAll("\\s+", " ").replace("Max open files ", "").trim();
      }
    } catch (IOException ignored) {
      // not Linux
    }
    return "unknown";
  }
}
