package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.process.SimProcess;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.sim.SimEngineOptions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * P12, P13 (issue 44): sharing a saturated fleet. Simulated engines with a latency profile and a bounded batch
 * ({@code max_num_seqs}) give the fleet a capacity C of sequences at once. A steady tenant sends 20 % of what the fleet
 * serves (open loop; the fleet serves what its slower tier does: the decode engines C sequences over a request's time, the
 * one producer a prompt per {@code ttft_base_ms}, its steps' cost growing with each prompt they take) beside a tenant flooding it with 5× C requests at once (closed loop); the steady tenant's TTFT p99
 * is compared with its value alone, once through a router that dispatches everything (no tenants, the default
 * {@code serving.max_legs_in_flight}) and once through one with flow control (tenants, {@code max_legs_in_flight} = C, {@code flow.prefill_legs_max} 1).
 * A {@code high} tenant beside the flood is compared with itself alone; goodput (requests whose first token came within
 * the TTFT target) at 3× overload with and without flow control. Then 3 clustered replicas share one tenant's token
 * quota under a flood spread over all three: tokens admitted (the replicas' {@code narwhal_tenant_tokens_total}) against
 * the quota for the time run.
 */
public final class TenantsScenario implements Scenario {
  private static final String PATH = "/v1/completions";
  private static final List<String> REPLICAS = List.of("A", "B", "C");

  @Override
  public String name() {
    return "tenants";
  }

  @Override
  public String summary() {
    return "P12, P13: a steady and a high-priority tenant beside a 5x flood, with and without flow control; goodput at 3x; "
        + "a token quota shared by 3 replicas";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    int seqs = smoke ? 4 : 16;
    int capacity = 2 * seqs;
    int tokens = smoke ? 8 : 32;
    double itlMs = 10;
    double ttftMs = 20;
    double requestS = (ttftMs + tokens * itlMs) / 1000.0;
    double decodePerS = capacity / requestS;
    double prefillPerS = 1000.0 / ttftMs;
    double steadyRate = 0.2 * Math.min(decodePerS, prefillPerS);
    double measureS = smoke ? 4 : 30;
    double warmS = smoke ? 1 : 10;
    long targetMs = smoke ? 2_000 : 1_000;
    BenchReport report = env.report();
    Progress progress = env.progress();
    // the engines in their own JVM: beside the load generator's 200 streams they ran 3x slower than their profile
    SimProcess fleet = env.own(SimProcess.start(env, name(), List.of(SimBench.engine("P0", "prefill").setTtftBaseMs(ttftMs),
        decode("D0", seqs, itlMs), decode("D1", seqs, itlMs)), "1g"));
    LoadGenerator load = env.own(new LoadGenerator());
    report.layout("bench process: load generator (Vert.x); engine process (own JVM): simulated P0 (prefill, " + ttftMs
            + " ms) and D0 D1 (decode, " + itlMs + " ms a token, max_num_seqs " + seqs + ": the fleet runs C = " + capacity
            + " sequences at once)")
        .layout("router: one replica, its own JVM (-Xmx1g): first dispatching everything (no tenants, serving.max_legs_in_flight "
            + "at its default, flow.engine_queue_max 0), then with flow control (tenants steady and flood of class normal, vip of class high; "
            + "max_legs_in_flight = C, flow.reserved_for_high = C/4, flow.prefill_legs_max 1)")
        .layout("quota: 3 clustered replicas, each its own JVM, one tenant with tokens_per_minute shared")
        .layout("all on one 2-core machine");
    report.parameter("capacity_c", capacity).parameter("tokens", tokens + " (mean; each request 1/2 to 3/2 of it)").parameter("steady_per_s", Fmt.num(steadyRate, 1))
        .parameter("fleet_per_s", Fmt.num(Math.min(decodePerS, prefillPerS), 1) + " (decode " + Fmt.num(decodePerS, 1)
            + ", prefill " + Fmt.num(prefillPerS, 1) + ")")
        .parameter("flood_concurrency", 5 * capacity).parameter("measure_s", measureS).parameter("ttft_target_ms", targetMs);
    Path keys = env.tmp().resolve("tenant-keys");
    Files.createDirectories(keys);
    for (String t : List.of("steady", "flood", "vip", "metered")) Files.writeString(keys.resolve(t), "sk-" + t);

    JsonObject plain = SimBench.set(SimBench.unbalanced(fleet.fleetFile(env.tmp().resolve("journal-a.jsonl"), 0)),
        "serving", "max_in_flight", 20 * capacity);
    SimBench.set(plain, "flow", "engine_queue_max", 0);
    progress.say("router dispatching everything (no tenants)");
    Phases everything;
    try (RouterProcess router = RouterProcess.start(env, name() + "-everything", plain,
        new RouterProcess.Options(List.of("-Xmx1g"), false, false))) {
      HttpWork via = new HttpWork(load.vertx(), load.client(10 * capacity), "127.0.0.1", router.port());
      everything = phases(load, via, via, via, steadyRate, capacity, tokens, warmS, measureS, targetMs, progress, "dispatch everything",
          new PlacementBreakdown(List.of(env.tmp().resolve("journal-a.jsonl"))));
    }
    JsonObject flow = SimBench.set(SimBench.unbalanced(fleet.fleetFile(env.tmp().resolve("journal-b.jsonl"), 0)),
        "serving", "max_in_flight", 20 * capacity);
    SimBench.set(flow, "serving", "max_legs_in_flight", capacity);
    SimBench.set(flow, "flow", "reserved_for_high", capacity / 4);
    // P0 takes every short prompt of a burst into one step whose time grows with each (ttft_base_ms per prefill), and
    // reports none waiting: the router lines the prompts up instead, one at a time on the producer
    SimBench.set(flow, "flow", "prefill_legs_max", 1);
    flow.put("tenants", new JsonObject().put("steady", tenant(keys, "steady")).put("flood", tenant(keys, "flood"))
        .put("vip", tenant(keys, "vip").put("class", "high")));
    progress.say("router with flow control (tenants, max_legs_in_flight " + capacity + ", reserved_for_high " + capacity / 4
        + ", prefill_legs_max 1)");
    Phases controlled;
    try (RouterProcess router = RouterProcess.start(env, name() + "-flow", flow,
        new RouterProcess.Options(List.of("-Xmx1g"), false, false))) {
      HttpWork via = new HttpWork(load.vertx(), load.client(10 * capacity), "127.0.0.1", router.port());
      controlled = phases(load, via.withHeader("authorization", "Bearer sk-steady"), via.withHeader("authorization", "Bearer sk-flood"),
          via.withHeader("authorization", "Bearer sk-vip"), steadyRate, capacity, tokens, warmS, measureS, targetMs, progress, "flow control",
          new PlacementBreakdown(List.of(env.tmp().resolve("journal-b.jsonl"))));
      String metrics = via.getBlocking("/metrics", 10_000).body().toString();
      ResultTable waits = new ResultTable("the router's queue over the flow-control phases (narwhal_flow_wait_seconds: attempts that waited)",
          "class", "attempts that waited", "mean wait ms", "longest of the last window ms");
      for (String c : List.of("high", "normal")) {
        double count = series(metrics, "narwhal_flow_wait_seconds_count{class=\"" + c + "\"}");
        double sum = series(metrics, "narwhal_flow_wait_seconds_sum{class=\"" + c + "\"}");
        double max = series(metrics, "narwhal_flow_wait_seconds_max{class=\"" + c + "\"}");
        waits.row(c, (long) count, count == 0 ? "—" : Fmt.num(sum * 1000 / count, 1), Fmt.num(max * 1000, 1));
      }
      report.table(waits);
    }

    ResultTable table = new ResultTable("TTFT of the tenants (client-measured, ms), " + (int) measureS + " s a phase",
        "router", "steady alone p99", "steady beside 5x flood p99", "ratio", "high alone p99", "high beside flood p99", "ratio",
        "goodput at 3x (req/s within " + targetMs + " ms)", "flood served/s", "steady errors");
    for (Phases p : List.of(everything, controlled)) {
      table.row(p.label, Fmt.pct(p.steadyAlone.firstToken(), 99), Fmt.pct(p.steadyFlooded.firstToken(), 99),
          Fmt.num(ratio(p.steadyFlooded, p.steadyAlone), 2) + "×", Fmt.pct(p.vipAlone.firstToken(), 99),
          Fmt.pct(p.vipFlooded.firstToken(), 99), Fmt.num(ratio(p.vipFlooded, p.vipAlone), 2) + "×", Fmt.num(p.goodput, 1),
          Fmt.num(p.flood.rps(), 1), p.steadyFlooded.errors());
    }
    report.table(table);
    ResultTable where = new ResultTable("where the measured tenant's time went (the router's journal: completed requests of the phase), ms",
        "router", "phase", "requests", "queued p50", "queued p99", "prefill p50", "prefill p99", "to first output p50",
        "to first output p99", "first output p99");
    for (Phases p : List.of(everything, controlled)) {
      p.rows.forEach((phase, rows) -> where.row(p.label, phase, rows.size(), ms(rows, "queued_s", null, 0.5), ms(rows, "queued_s", null, 0.99),
          ms(rows, "ttft_s", "queued_s", 0.5), ms(rows, "ttft_s", "queued_s", 0.99), ms(rows, "first_byte_s", "ttft_s", 0.5),
          ms(rows, "first_byte_s", "ttft_s", 0.99), ms(rows, "first_byte_s", null, 0.99)));
    }
    report.table(where);
    double steadyRatio = ratio(controlled.steadyFlooded, controlled.steadyAlone);
    report.verdict(Verdict.perf("P12", "steady tenant's TTFT p99 beside a 5x flood / alone, flow control (dispatch everything: "
        + Fmt.num(ratio(everything.steadyFlooded, everything.steadyAlone), 2) + "×)", Fmt.num(steadyRatio, 2) + "×", "≤ 1.5×",
        steadyRatio <= 1.5 && controlled.steadyFlooded.errors() == 0));
    double vipRatio = ratio(controlled.vipFlooded, controlled.vipAlone);
    report.verdict(Verdict.perf("P13", "high class's TTFT p99 under overload / unloaded, flow control", Fmt.num(vipRatio, 2) + "×",
        "≤ 1.2×", vipRatio <= 1.2 && controlled.vipFlooded.errors() == 0));
    report.verdict(Verdict.perf("P13", "goodput at 3x overload, flow control / dispatch everything",
        Fmt.num(controlled.goodput, 1) + " / " + Fmt.num(everything.goodput, 1) + " req/s", "≥ 1×",
        controlled.goodput >= everything.goodput));

    quota(env, fleet, load, keys, tokens, smoke, report, progress);
  }

  /**
   * The phases of one router: each tenant alone, beside the flood, and the 3x goodput run; {@code rows}: the measured
   * tenant's journal rows of each measured phase.
   */
  private record Phases(String label, RunStats steadyAlone, RunStats steadyFlooded, RunStats vipAlone, RunStats vipFlooded,
                        RunStats flood, double goodput, java.util.Map<String, List<JsonObject>> rows) {
  }

  /** The {@code q} quantile of {@code field} less {@code less} (null: nothing) over {@code rows}, in ms; "—" when none has them. */
  private static String ms(List<JsonObject> rows, String field, String less, double q) {
    double[] v = rows.stream().filter(r -> r.getValue(field) instanceof Number && (less == null || r.getValue(less) instanceof Number))
        .mapToDouble(r -> r.getDouble(field) - (less == null ? 0 : r.getDouble(less))).sorted().toArray();
    return v.length == 0 ? "—" : Fmt.num(1000 * v[Math.min(v.length - 1, (int) Math.ceil(q * v.length) - 1)], 1);
  }

  /** The rows of {@code tenant} (null: any) that {@code journal} gained since its mark. */
  private static List<JsonObject> rowsOf(PlacementBreakdown journal, String tenant) {
    return journal.rows().stream().filter(r -> tenant == null || tenant.equals(r.getString("tenant"))).toList();
  }

  private static Phases phases(LoadGenerator load, HttpWork steady, HttpWork flood, HttpWork vip, double rate, int capacity,
                               int tokens, double warmS, double measureS, long targetMs, Progress progress, String label,
                               PlacementBreakdown journal)
      throws Exception {
    // without tenants every request is the tenant default: the phases' rows are told apart by when they ended
    boolean tenants = steady != flood;
    java.util.Map<String, List<JsonObject>> rows = new java.util.LinkedHashMap<>();
    java.util.function.Supplier<Buffer> body = variedLengths(tokens);
    long timeoutMs = 120_000;
    progress.say(label + ": warm-up");
    load.closedLoop("warm-up", capacity, 0, warmS, 30, () -> steady.post(PATH, body.get(), true, timeoutMs));
    progress.say(label + ": steady tenant alone, " + Fmt.num(rate, 1) + "/s");
    journal.mark();
    RunStats steadyAlone = load.openLoop("steady alone", rate, measureS, 30, () -> steady.post(PATH, body.get(), true, timeoutMs), 1, 0);
    rows.put("steady alone", rowsOf(journal, tenants ? "steady" : null));
    progress.say(label + ": high tenant alone");
    RunStats vipAlone = load.openLoop("high alone", rate, measureS, 30, () -> vip.post(PATH, body.get(), true, timeoutMs), 2, 0);
    progress.say(label + ": steady tenant beside a flood of " + 5 * capacity + " at once");
    Beside steadyFlooded = beside(load, flood, 5 * capacity, body, timeoutMs, warmS, measureS, () -> {
      journal.mark();
      RunStats stats = load.openLoop("steady flooded", rate, measureS, 30, () -> steady.post(PATH, body.get(), true, timeoutMs), 3, 0);
      if (tenants) rows.put("steady beside the flood", rowsOf(journal, "steady"));
      return stats;
    });
    progress.say(label + ": high tenant beside the flood");
    Beside vipFlooded = beside(load, flood, 5 * capacity, body, timeoutMs, warmS, measureS, () -> {
      journal.mark();
      RunStats stats = load.openLoop("high flooded", rate, measureS, 30, () -> vip.post(PATH, body.get(), true, timeoutMs), 4, 0);
      if (tenants) rows.put("high beside the flood", rowsOf(journal, "vip"));
      rows.put("the flood, beside high", rowsOf(journal, tenants ? "flood" : null));
      return stats;
    });
    progress.say(label + ": goodput at 3x (flood " + 3 * capacity + " at once beside the steady tenant)");
    Beside third = beside(load, flood, 3 * capacity, body, timeoutMs, warmS, measureS,
        () -> load.openLoop("steady at 3x", rate, measureS, 30, () -> steady.post(PATH, body.get(), true, timeoutMs), 5, 0));
    double goodput = (within(third.measured, targetMs) + within(third.flood, targetMs)) / measureS;
    return new Phases(label, steadyAlone, steadyFlooded.measured, vipAlone, vipFlooded.measured, steadyFlooded.flood, goodput, rows);
  }

  /**
   * Streamed completions asking for 1/2 to 3/2 of {@code tokens} (mean {@code tokens}), in turn, as real outputs vary:
   * requests of one length admitted together end together, and their legs then free in bursts a request's duration
   * apart, which no order of the queue can smooth.
   */
  private static java.util.function.Supplier<Buffer> variedLengths(int tokens) {
    List<Buffer> lengths = new ArrayList<>();
    for (int i = 0; i < 5; i++) lengths.add(Bodies.completion(Math.max(1, tokens * (2 + i) / 4), true).toBuffer());
    java.util.concurrent.atomic.AtomicInteger turn = new java.util.concurrent.atomic.AtomicInteger();
    return () -> lengths.get(Math.floorMod(turn.getAndIncrement() * 3, lengths.size()));
  }

  /** A tenant's run {@code measured} while a closed loop of {@code concurrency} floods from another thread. */
  private record Beside(RunStats measured, RunStats flood) {
  }

  private static Beside beside(LoadGenerator load, HttpWork flood, int concurrency, java.util.function.Supplier<Buffer> body, long timeoutMs, double warmS,
                               double measureS, java.util.concurrent.Callable<RunStats> measured) throws Exception {
    AtomicReference<RunStats> floodStats = new AtomicReference<>();
    Thread flooding = new Thread(() -> floodStats.set(load.closedLoop("flood", concurrency, warmS, measureS, 60,
        () -> flood.post(PATH, body.get(), true, timeoutMs))), "flood");
    flooding.start();
    Thread.sleep((long) (warmS * 1000));
    RunStats stats = measured.call();
    flooding.join();
    return new Beside(stats, floodStats.get());
  }

  /** Requests of {@code stats} whose first token came within {@code ms}. */
  private static long within(RunStats stats, long ms) {
    LatencyHistogram h = stats.firstToken();
    return h.countAtMost(ms * 1_000_000L);
  }

  private static double ratio(RunStats a, RunStats b) {
    double base = b.firstToken().percentileMs(99);
    return base <= 0 ? Double.NaN : a.firstToken().percentileMs(99) / base;
  }

  private static SimEngineOptions decode(String name, int seqs, double itlMs) {
    return SimBench.engine(name, "decode").setMaxNumSeqs(seqs).setItlMs(itlMs);
  }

  private static JsonObject tenant(Path keys, String name) {
    return new JsonObject().put("api_key_file", keys.resolve(name).toAbsolutePath().toString());
  }

  /**
   * Three clustered replicas share tenant {@code metered}'s {@code tokens_per_minute}: a flood spread over the three
   * for two minutes (smoke: 10 s), then the tokens the replicas admitted ({@code narwhal_tenant_tokens_total}) against
   * the quota for that time (the minute slides: two minutes admit about two quotas).
   */
  private static void quota(BenchEnv env, SimProcess fleet, LoadGenerator load, Path keys, int tokens, boolean smoke,
                            BenchReport report, Progress progress) throws Exception {
    double runS = smoke ? 10 : 120;
    long perMinute = smoke ? 2_000 : 60_000;
    progress.say("3 clustered replicas sharing tokens_per_minute " + perMinute + " of one tenant, " + (int) runS + " s");
    ClusterReplicas cluster = ClusterReplicas.start(env, fleet, load, f -> {
      SimBench.unbalanced(f);
      f.put("tenants", new JsonObject().put("metered", tenant(keys, "metered").put("tokens_per_minute", perMinute)));
      return f;
    }, REPLICAS);
    java.util.function.Supplier<Buffer> body = variedLengths(tokens);
    List<Thread> threads = new ArrayList<>();
    List<RunStats> runs = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < REPLICAS.size(); i++) {
      HttpWork via = cluster.client(i).withHeader("authorization", "Bearer sk-metered");
      Thread t = new Thread(() -> runs.add(load.closedLoop("metered", 8, 0, runS, 30, () -> via.post(PATH, body.get(), true, 30_000))));
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) t.join();
    long admitted = 0;
    long refused = 0;
    for (int i = 0; i < REPLICAS.size(); i++) {
      String metrics = cluster.client(i).getBlocking("/metrics", 10_000).body().toString();
      admitted += (long) series(metrics, "narwhal_tenant_tokens_total{tenant=\"metered\"}");
      refused += (long) series(metrics, "narwhal_rejected_total{model=\"\",reason=\"quota_tokens\"}");
    }
    double allowed = perMinute * Math.max(1, runS / 60.0);
    ResultTable t = new ResultTable("one tenant's token quota across 3 replicas", "quota tokens/min", "run s",
        "tokens admitted (3 replicas)", "quota for the run", "admitted / quota", "requests refused (quota_tokens)");
    t.row(perMinute, (int) runS, admitted, (long) allowed, Fmt.num(admitted / allowed, 3) + "×", refused);
    report.table(t);
    if (smoke) {
      report.verdict(Verdict.info("P12", "tokens admitted across 3 replicas / quota (smoke: the first minute's quota "
          + "is all usable at once)", Fmt.num(admitted / allowed, 2) + "×"));
    } else {
      report.verdict(Verdict.perf("P12", "tokens admitted across 3 replicas over two minutes / the quota's two minutes",
          Fmt.num(admitted / allowed, 3) + "×", "within 5 %", Math.abs(admitted / allowed - 1) <= 0.05));
    }
  }

  /** The value of one exposition line starting with {@code series}, 0 when absent. */
  private static double series(String metrics, String series) {
    return metrics.lines().filter(l -> l.startsWith(series + " ")).mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1)))
        .sum();
  }
}
