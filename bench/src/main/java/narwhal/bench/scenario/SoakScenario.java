package narwhal.bench.scenario;

import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.load.Work;
import narwhal.bench.probe.HeapSampler;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.probe.Profiling;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
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
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * R2. A bounded soak: mixed load (streaming and not, completions and chat, 4–48 tokens, 3 % of streams hung up
 * by the client after their first token) for {@code --minutes}, against engines that fail about 10 % of the
 * requests (fault rules with a probability: 5 % on the prefill leg, 5 % on the decode leg, of several kinds).
 * Retries are on (2 attempts). Afterwards: reservations still held (from {@code /narwhal/state}), requests
 * without exactly one terminal journal row, clients that never got an end, and the router's live heap (after
 * a full collection) over time.
 */
public final class SoakScenario implements Scenario {
  static final double FAULT_SHARE = 0.10;

  @Override
  public String name() {
    return "soak";
  }

  @Override
  public String summary() {
    return "R2: bounded mixed load with 10% injected faults: leaks, journal rows, hung clients, heap";
  }

  /** Prefill-leg rules (5 % together) for each producer. */
  static List<JsonObject> prefillFaults() {
    return List.of(rule("status", 0.015).put("status", 503), rule("reset", 0.01).put("after", 0), rule("descriptor_missing", 0.01),
        rule("queue_full", 0.01), rule("hang_before_headers", 0.005));
  }

  /** Decode-leg rules (5 % together) for each consumer. */
  static List<JsonObject> decodeFaults() {
    return List.of(rule("close_before_done", 0.015).put("after", 2), rule("error_in_stream", 0.01).put("after", 1),
        rule("kv_transfer_fail", 0.01), rule("done_before_output", 0.005), rule("silence_after", 0.005).put("after", 2),
        rule("status", 0.005).put("status", 500));
  }

  private static JsonObject rule(String kind, double p) {
    return new JsonObject().put("kind", kind).put("probability", p);
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    double durationS = smoke ? 10 : env.options().minutes() * 60;
    int concurrency = env.options().levels(List.of(32), List.of(8)).get(0);
    double warmS = smoke ? 3 : Math.max(15, durationS * 0.25);
    int gcEveryS = smoke ? 3 : 30;
    BenchReport report = env.report();
    Progress progress = env.progress();

    List<narwhal.sim.SimEngineOptions> engines = List.of(SimBench.engine("P0", "prefill").setTtftBaseMs(5),
        SimBench.engine("P1", "prefill").setTtftBaseMs(5), SimBench.engine("D0", "decode").setItlMs(2),
        SimBench.engine("D1", "decode").setItlMs(2));
    Path journal = env.tmp().resolve("journal.jsonl");
    Files.deleteIfExists(journal);
    SimBench fleet = env.own(SimBench.start(engines));
    JsonObject cfg = SimBench.unbalanced(fleet.fleetFile(journal, 0));
    double requestTimeoutS = 15;
    SimBench.set(cfg, "serving", "max_attempts", 2);
    SimBench.set(cfg, "serving", "request_timeout_s", requestTimeoutS);
    SimBench.set(cfg, "serving", "prefill_timeout_s", 2);
    SimBench.set(cfg, "engine", "first_token_timeout_s", 1.5);
    SimBench.set(cfg, "engine", "decode_read_timeout_s", 1);
    progress.say("starting the router replica (JMX for heap readings)");
    RouterProcess router = env.own(RouterProcess.start(env, name(), cfg,
        new RouterProcess.Options(List.of("-Xmx1g"), true, env.options().profile())));
    // Faults go in once the router serves: its preflight must pass against healthy engines.
    for (String p : List.of("P0", "P1")) prefillFaults().forEach(r -> fleet.engine(p).faults().add(r.copy().put("phase", "prefill")));
    for (String d : List.of("D0", "D1")) decodeFaults().forEach(r -> fleet.engine(d).faults().add(r.copy().put("phase", "decode")));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpClientAgent http = load.client(concurrency + 16);
    HttpWork via = new HttpWork(load.vertx(), http, "127.0.0.1", router.port());
    long clientTimeoutMs = (long) ((requestTimeoutS + 10) * 1000);

    report.layout("bench process: load generator (" + concurrency + " clients back to back) + simulated P0 P1 (prefill, 5 ms) and D0 D1 (decode, 2 ms/token)")
        .layout("faults: every engine rolls its rules per request: prefill " + kinds(prefillFaults()) + "; decode " + kinds(decodeFaults()))
        .layout("router: one replica, its own JVM (-Xmx1g), pid " + router.pid() + ", max_attempts 2, request timeout " + requestTimeoutS + " s")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("duration_s", durationS).parameter("clients", concurrency).parameter("warmup_s", warmS)
        .parameter("fault_share", FAULT_SHARE).parameter("client_timeout_ms", clientTimeoutMs);

    Map<String, Exchange.Outcome> byRid = new ConcurrentHashMap<>();
    AtomicLong sent = new AtomicLong();
    AtomicLong withoutRid = new AtomicLong();
    Work mixed = () -> {
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      double pick = rnd.nextDouble();
      boolean chat = pick < 0.2 || pick >= 0.9;
      boolean stream = pick < 0.65;
      int tokens = 4 + rnd.nextInt(45);
      JsonObject body = chat ? Bodies.chat(tokens, stream) : Bodies.completion(tokens, stream);
      int cancelAfter = stream && rnd.nextDouble() < 0.03 ? 1 : -1;
      sent.incrementAndGet();
      return via.post(chat ? "/v1/chat/completions" : "/v1/completions", body.toBuffer(), stream, clientTimeoutMs, cancelAfter)
          .onSuccess(e -> {
            if (e.rid() == null) withoutRid.incrementAndGet();
            else byRid.put(e.rid(), e.outcome());
          });
    };

    HeapSampler heap = new HeapSampler(router.probe()).start(load::inFlight);
    List<double[]> live = new ArrayList<>();
    Thread gcThread = new Thread(() -> {
      double next = warmS;
      while (!Thread.currentThread().isInterrupted()) {
        double now = heap.seconds();
        if (now >= durationS - 1) break;
        if (now >= next) {
          long used = router.probe().fullGcThenUsed();
          synchronized (live) {
            live.add(new double[] {heap.seconds(), used / 1048576.0});
          }
          next += gcEveryS;
        }
        JvmProbe.sleep(200);
      }
      long used = router.probe().fullGcThenUsed();
      synchronized (live) {
        live.add(new double[] {heap.seconds(), used / 1048576.0});
      }
    }, "bench-soak-gc");
    gcThread.setDaemon(true);

    progress.say("soak: " + Fmt.num(durationS, 0) + " s, " + concurrency + " clients, ~" + Math.round(FAULT_SHARE * 100) + "% of requests faulted");
    RunStats stats;
    try (Progress.Ticker t = progress.every(smoke ? 2000 : 10_000, () -> sent.get() + " sent, " + load.inFlight() + " in flight, heap "
        + Fmt.mib(heap.lastUsed()) + " MiB")) {
      gcThread.start();
      stats = load.closedLoop("soak", concurrency, 0, durationS, requestTimeoutS + 15, mixed);
    }
    gcThread.join(30_000);
    heap.stop();
    int hungNow = load.inFlight();

    progress.say("load stopped; checking reservations and the journal");
    int reservations = -1;
    long deadline = System.nanoTime() + 15_000_000_000L;
    while (System.nanoTime() < deadline) {
      HttpWork.Reply state = via.getBlocking("/narwhal/state", 5000);
      reservations = new JsonObject(state.body()).getInteger("reservations", -1);
      if (reservations == 0) break;
      JvmProbe.sleep(250);
    }
    long expectedRows = sent.get();
    List<JsonObject> all = readJournal(journal, expectedRows, 10_000);
    // Request rows carry a rid; the breaker also journals engine events (state changes, probes), told apart here.
    List<JsonObject> rows = all.stream().filter(r -> r.containsKey("rid")).toList();
    Map<String, Long> events = new TreeMap<>();
    all.stream().filter(r -> !r.containsKey("rid")).forEach(r -> events.merge(r.getValue("event") + (r.getValue("to") != null
        ? " → " + r.getValue("to") : r.getValue("outcome") != null ? " " + r.getValue("outcome") : ""), 1L, Long::sum));
    Map<String, Integer> rowsPerRid = new HashMap<>();
    Map<String, Long> terminals = new TreeMap<>();
    Map<String, Long> reasons = new TreeMap<>();
    for (JsonObject row : rows) {
      rowsPerRid.merge(String.valueOf(row.getValue("rid")), 1, Integer::sum);
      terminals.merge(String.valueOf(row.getValue("terminal")), 1L, Long::sum);
      if (!"completed".equals(row.getValue("terminal"))) reasons.merge(row.getValue("terminal") + ": " + row.getValue("reason"), 1L, Long::sum);
    }
    long missing = byRid.keySet().stream().filter(rid -> !rowsPerRid.containsKey(rid)).count();
    long duplicated = rowsPerRid.values().stream().filter(n -> n > 1).count();
    long hung = stats.count(Exchange.Outcome.TIMEOUT) + hungNow;

    ResultTable clients = new ResultTable("soak: what the clients saw (" + Fmt.num(durationS, 0) + " s, " + concurrency + " clients)",
        "sent", "ok", "HTTP errors", "error frame", "no [DONE]", "transport", "cancelled by client", "hung", "statuses");
    clients.row(sent.get(), stats.ok(), stats.count(Exchange.Outcome.HTTP_ERROR), stats.count(Exchange.Outcome.STREAM_ERROR),
        stats.count(Exchange.Outcome.NO_DONE), stats.count(Exchange.Outcome.TRANSPORT_ERROR), stats.count(Exchange.Outcome.CANCELLED),
        hung, statuses(stats));
    report.table(clients);
    ResultTable router_ = new ResultTable("soak: what the router recorded", "journal rows", "rows / sent", "client rids without a row",
        "rids with >1 row", "terminals", "reservations after", "requests/s ok");
    router_.row(rows.size(), Fmt.num(rows.isEmpty() ? 0 : (double) rows.size() / Math.max(1, expectedRows), 3), missing, duplicated,
        terminals.toString(), reservations, Fmt.rate(stats.rps()));
    report.table(router_);
    ResultTable why = new ResultTable("soak: non-completed journal rows by terminal and reason", "terminal: reason", "rows");
    reasons.forEach(why::row);
    report.table(why);
    ResultTable ev = new ResultTable("soak: engine events the breaker journalled", "event", "rows");
    events.forEach(ev::row);
    if (events.isEmpty()) ev.row("(none)", 0);
    report.table(ev);

    List<double[]> liveCopy;
    synchronized (live) {
      liveCopy = List.copyOf(live);
    }
    ResultTable heapT = new ResultTable("soak: router heap in use right after a full collection (under load, every "
        + gcEveryS + " s after warm-up)", "t s", "live MiB");
    liveCopy.forEach(p -> heapT.row(Fmt.num(p[0], 0), Fmt.num(p[1], 1)));
    report.table(heapT);
    double growth = liveCopy.size() < 2 ? Double.NaN : liveCopy.get(liveCopy.size() - 1)[1] - liveCopy.get(0)[1];
    double first = liveCopy.isEmpty() ? Double.NaN : liveCopy.get(0)[1];
    double allowed = Math.max(8, first * 0.10);

    report.verdict(Verdict.check("R2", "leaked reservations (state after the load)", String.valueOf(reservations), "0", reservations == 0));
    report.verdict(Verdict.check("R2", "requests without exactly one terminal journal row",
        (expectedRows - rows.size()) + " missing overall, " + missing + " client rids without a row, " + duplicated + " duplicated",
        "0", rows.size() == expectedRows && missing == 0 && duplicated == 0));
    report.verdict(Verdict.check("R2", "hung clients (no end within request timeout + 10 s)", String.valueOf(hung), "0", hung == 0));
    report.verdict(Verdict.check("R2", "live heap growth after warm-up (full GC, first → last)",
        Fmt.num(growth, 1) + " MiB (" + Fmt.num(first, 1) + " → " + Fmt.num(first + growth, 1) + ")",
        "≤ " + Fmt.num(allowed, 1) + " MiB (max of 8 MiB, 10 %)", Double.isFinite(growth) && growth <= allowed));
    long faulted = rows.stream().filter(r -> r.getJsonArray("attempt_failures") != null && !r.getJsonArray("attempt_failures").isEmpty()).count();
    report.verdict(Verdict.info("R2", "requests that met at least one injected fault (journal attempt_failures)",
        faulted + " of " + rows.size() + " (" + Fmt.num(100.0 * faulted / Math.max(1, rows.size()), 1) + " %)"));
    if (stats.count(Exchange.Outcome.NO_DONE) > 0) {
      report.note(stats.count(Exchange.Outcome.NO_DONE) + " stream(s) ended after a 200 with neither [DONE] nor an error frame"
          + " (docs/errors.md wants a terminal error event): " + stats.errorSamples());
    }
    if (withoutRid.get() > 0) report.note(withoutRid.get() + " request(s) got no response headers (no x-request-id)");

    Map<String, List<double[]>> heapSeries = new LinkedHashMap<>();
    heapSeries.put("heap in use (MiB)", heap.series(1));
    heapSeries.put("live after full GC (MiB)", liveCopy);
    Map<String, List<double[]>> rate = new LinkedHashMap<>();
    List<double[]> ok = new ArrayList<>();
    List<double[]> failed = new ArrayList<>();
    List<long[]> timeline = stats.timeline();
    for (int i = 0; i < timeline.size(); i++) {
      ok.add(new double[] {i, timeline.get(i)[0]});
      failed.add(new double[] {i, timeline.get(i)[1]});
    }
    rate.put("ok per second", ok);
    rate.put("failed per second", failed);
    report.chart(ChartWriter.timeSeries(env.out().resolve(name() + (smoke ? "-smoke" : "") + ".png"), "Soak with 10% injected faults",
        "seconds", List.of(new ChartWriter.Panel("MiB", heapSeries), new ChartWriter.Panel("requests/s", rate))));
    report.raw("clients", stats.toJson()).raw("terminals", new JsonObject(new HashMap<>(terminals)))
        .raw("heap", heap.toJson());
    Profiling.summarize(env, router);
    if (report.violated()) report.note("journal kept for inspection: " + journal);
    else Files.deleteIfExists(journal);
  }

  private static String kinds(List<JsonObject> rules) {
    List<String> out = new ArrayList<>();
    rules.forEach(r -> out.add(r.getString("kind") + " " + Fmt.num(r.getDouble("probability") * 100, 1) + "%"));
    return String.join(", ", out);
  }

  private static String statuses(RunStats stats) {
    Map<Integer, Long> s = new TreeMap<>(stats.statuses());
    s.remove(200);
    return s.isEmpty() ? "—" : s.toString();
  }

  /** The journal's rows, once it holds {@code expected} of them or stops growing. */
  static List<JsonObject> readJournal(Path journal, long expected, long waitMs) throws IOException {
    long deadline = System.nanoTime() + waitMs * 1_000_000;
    List<JsonObject> rows = List.of();
    int lastSize = -1;
    while (true) {
      List<JsonObject> now = new ArrayList<>();
      if (Files.exists(journal)) {
        for (String line : Files.readAllLines(journal)) {
          if (line.isBlank()) continue;
          try {
            now.add(new JsonObject(line));
          } catch (RuntimeException e) {
            now.add(new JsonObject().put("rid", "unparseable").put("terminal", "unparseable"));
          }
        }
      }
      rows = now;
      if (rows.size() >= expected || System.nanoTime() > deadline || (rows.size() == lastSize && lastSize >= 0 && rows.size() > 0
          && System.nanoTime() > deadline - waitMs * 500_000)) {
        return rows;
      }
      lastSize = rows.size();
      JvmProbe.sleep(250);
    }
  }
}
