package narwhal.bench.scenario;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.Work;
import narwhal.bench.load.RunStats;
import narwhal.bench.probe.BalancerWatch;
import narwhal.bench.probe.JitWarmup;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.probe.ProcessGroups;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.EngineFleet;
import narwhal.bench.process.HaproxyProcess;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.process.SimProcess;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.ChartWriter;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.placement.DecisionCpu;
import narwhal.sim.SimEngineOptions;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Issue 22's placement benchmark. 4 prefill and 4 decode simulated engines (their own JVM) with the latency profile
 * {@code qwen2.5-0.5b-l4}, prefix caching, {@code max_num_seqs} 64 and vLLM's default 4096 KV blocks; three workloads
 * ({@link PlacementWorkload}: shared prefix, multi-turn chat, no sharing), streamed. First each policy's capacity
 * (closed loop); then open-loop Poisson arrivals at 50, 80 and 95 % of {@code least_reserved}'s capacity under every
 * policy, on one replica and (80 %) on three clustered replicas behind haproxy. Reported: TTFT p50/p99, e2e p50,
 * throughput, the producers' own prefix-cache hit rate (their {@code vllm:prefix_cache_*} counters) against the
 * workload's ideal, and load imbalance (most requests on one engine over the mean); a producer made 5× slower
 * ({@code POST /sim/slowdown}) mid-run; CPU per placement decision at 8, 64 and 256 engines.
 */
public final class PlacementScenario implements Scenario {
  static final List<String> POLICIES = List.of("least_reserved", "load", "cache_aware");
  static final List<String> REPLICAS = List.of("A", "B", "C");
  static final String PROFILE = "qwen2.5-0.5b-l4";
  static final int KV_BLOCKS = 4096;
  static final int MAX_NUM_SEQS = 64;
  /** How many times longer the no-sharing runs are measured than the others. */
  static final int UNIQUE_RUNS = 3;
  static final int SHARED_GROUPS = 64;
  /**
   * The JIT warm-up's bound. A router placing 2,000-token prefills uses little CPU, so its compilers stay a large share
   * of it long after the hot path is compiled (40 % after 150 s, measured): the share never reaches JitWarmup's 3 %.
   */
  static final double WARM_UP_MAX_S = 90;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private long seed = 22;
  /** The journals of each topology's replicas, read after each of its runs. */
  private final Map<String, PlacementBreakdown> breakdowns = new LinkedHashMap<>();
  private final ResultTable breakdownTable = PlacementBreakdown.table();
  /** The processes of the topology being measured, read around each run. */
  private ProcessGroups machine = new ProcessGroups();

  @Override
  public String name() {
    return "placement";
  }

  @Override
  public String summary() {
    return "issue 22: placement policies on 4+4 loaded engines: TTFT, cache hit rate, imbalance, 1 and 3 replicas, slow producer, CPU per decision";
  }

  /** One run's figures. */
  record Result(String topology, String workload, String policy, String load, double rate, RunStats stats, double seconds,
                double hitRate, double ideal, double prefillImbalance, double decodeImbalance, JsonObject time) {
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    BenchReport report = env.report();
    Progress progress = env.progress();
    double warmS = smoke ? 0.5 : 3;
    double measureS = smoke ? 1.5 : 6;
    List<String> policies = smoke ? List.of("least_reserved", "cache_aware") : POLICIES;
    List<Double> loads = smoke ? List.of(0.8) : List.of(0.5, 0.8, 0.95);
    Map<String, PlacementWorkload.Shape> shapes = new LinkedHashMap<>();
    // 64 system prompts of 2048 tokens need twice the KV blocks of one engine and half those of the 4 producers: the
    // fleet can cache every prefix only if each producer keeps its share (with 32 every producer can hold them all)
    shapes.put(PlacementWorkload.SHARED, new PlacementWorkload.Shape(smoke ? 16 : SHARED_GROUPS, 16, 2048, 64, 16, 0));
    shapes.put(PlacementWorkload.MULTI_TURN, new PlacementWorkload.Shape(smoke ? 8 : 32, 0, 512, 64, 16, 6));
    shapes.put(PlacementWorkload.UNIQUE, new PlacementWorkload.Shape(1, 0, 2048, 64, 16, 0));

    List<SimEngineOptions> engines = new ArrayList<>();
    for (int i = 0; i < 4; i++) engines.add(engine("P" + i, "prefill"));
    for (int i = 0; i < 4; i++) engines.add(engine("D" + i, "decode"));
    SimProcess fleet = env.own(SimProcess.start(env, "placement", engines, "768m"));
    LoadGenerator load = env.own(new LoadGenerator());
    progress.say("starting one replica");
    RouterProcess single = env.own(RouterProcess.start(env, "router",
        policy(SimBench.unbalanced(fleet.fleetFile(env.tmp().resolve("router-journal.jsonl"), 0)), "least_reserved"),
        RouterProcess.Options.serving("--preflight=warn")));
    HttpWork singleClient = new HttpWork(load.vertx(), load.client(512), "127.0.0.1", single.port());
    machine = machine(List.of(single), fleet, null);
    breakdowns.put("1 replica", new PlacementBreakdown(List.of(env.tmp().resolve("router-journal.jsonl"))));
    breakdowns.put("1 replica, haproxy", new PlacementBreakdown(List.of(env.tmp().resolve("router-journal.jsonl"))));
    switchPolicy(List.of(single), List.of(singleClient), "cache_aware");
    report.layout("1 replica: " + warmUp(load, progress, List.of(single), singleClient, shapes, smoke).describe());

    report.layout("engines: P0–P3 (prefill) and D0–D3 (decode), engine-sim in a JVM of its own, latency profile " + PROFILE
            + ", prefix caching, max_num_seqs " + MAX_NUM_SEQS + ", " + KV_BLOCKS + " KV blocks of 16 tokens each")
        .layout("router: 1 replica (java -jar narwhal.jar serve), also behind haproxy for the shared prefix at 80 %; then 3 clustered "
            + "replicas behind haproxy (deploy/haproxy.cfg's settings); "
            + "placement.policy switched by hot reload of the fleet file between runs")
        .layout("load: open-loop Poisson arrivals, streamed completions (chat for multi-turn), " + warmS + " s warm-up then "
            + measureS + " s measured per run (" + UNIQUE_RUNS * measureS + " s for no-sharing; requests that started in it); "
            + "every run has fresh prompts (no hits across runs)")
        .layout("all on one 2-core machine shared with other helpers' builds and tests: absolute figures are noisy; "
            + "ratios against least_reserved in the same run are what count");
    shapes.forEach((k, s) -> report.parameter(k, new JsonObject().put("groups", s.groups()).put("prompts_per_group", s.promptsPerGroup())
        .put("system_prompt_len", s.systemTokens()).put("question_len", s.questionTokens()).put("output_len", s.outputTokens())
        .put("turns", s.turns())));
    report.parameter("warm_s", warmS).parameter("measure_s", measureS);

    // capacity: closed loop per workload and policy; the open-loop rates are fractions of least_reserved's
    ResultTable capacity = new ResultTable("capacity: closed loop, " + (smoke ? 8 : 24) + " clients, completed requests/s (1 replica)",
        "workload", "policy", "req/s", "TTFT p50 ms", "× least_reserved");
    Map<String, Map<String, Double>> capacities = new LinkedHashMap<>();
    for (String workload : shapes.keySet()) {
      for (String policy : policies) {
        switchPolicy(List.of(single), List.of(singleClient), policy);
        PlacementWorkload w = new PlacementWorkload(workload, shapes.get(workload), seed++);
        progress.say("capacity " + workload + " " + policy);
        RunStats stats = load.closedLoop("capacity", smoke ? 8 : 24, warmS, (smoke ? 1 : measureS * 0.7), 30,
            () -> singleClient.post(w.path(), w.next(), true, 60_000));
        capacities.computeIfAbsent(workload, k -> new LinkedHashMap<>()).put(policy, stats.rps());
        capacity.row(workload, policy, Fmt.rate(stats.rps()), Fmt.pct(stats.firstToken(), 50),
            Fmt.ratio(stats.rps() / capacities.get(workload).get("least_reserved")));
      }
    }
    report.table(capacity);

    List<Result> results = new ArrayList<>();
    for (String workload : shapes.keySet()) {
      double base = capacities.get(workload).get("least_reserved");
      for (double fraction : loads) {
        for (String policy : policies) {
          switchPolicy(List.of(single), List.of(singleClient), policy);
          progress.say("1 replica " + workload + " " + Math.round(fraction * 100) + " % " + policy);
          results.add(measure(fleet, load, singleClient, "1 replica", workload, shapes.get(workload), policy, fraction, base,
              warmS, measureS));
        }
      }
    }

    boolean haproxyHere = HaproxyProcess.binary().isPresent();
    if (!smoke && haproxyHere) {
      // the same single replica behind haproxy: what the balancer alone adds, beside the 3-replica runs below
      progress.say("starting haproxy in front of 1 replica");
      HaproxyProcess one = HaproxyProcess.start(HaproxyProcess.binary().get(), env.tmp().resolve("haproxy-one"),
          List.of(new HaproxyProcess.Server("replica-1", single.port())));
      try (BalancerWatch watchOne = new BalancerWatch(one).start()) {
        watchOne.await("replica-1", true, System.nanoTime(), 30_000);
        HttpWork viaOne = new HttpWork(load.vertx(), load.client(512), "127.0.0.1", one.port());
        machine = machine(List.of(single), fleet, one);
        for (String policy : List.of("least_reserved", "cache_aware")) {
          switchPolicy(List.of(single), List.of(singleClient), policy);
          progress.say("1 replica, haproxy shared-prefix 80 % " + policy);
          results.add(measure(fleet, load, viaOne, "1 replica, haproxy", PlacementWorkload.SHARED, shapes.get(PlacementWorkload.SHARED),
              policy, 0.8, capacities.get(PlacementWorkload.SHARED).get("least_reserved"), warmS, measureS));
        }
      } finally {
        one.close();
      }
      single.close();
      progress.say("starting 3 clustered replicas and haproxy");
      ClusterReplicas cluster = ClusterReplicas.start(env, fleet, load, f -> policy(f, "least_reserved"), REPLICAS, true,
          RouterProcess.Options.serving("--preflight=warn"));
      List<HaproxyProcess.Server> servers = new ArrayList<>();
      for (int i = 0; i < REPLICAS.size(); i++) servers.add(new HaproxyProcess.Server(REPLICAS.get(i), cluster.port(i)));
      HaproxyProcess haproxy = env.own(HaproxyProcess.start(HaproxyProcess.binary().get(), env.tmp().resolve("haproxy"), servers));
      BalancerWatch watch = env.own(new BalancerWatch(haproxy).start());
      long t0 = System.nanoTime();
      for (String name : REPLICAS) watch.await(name, true, t0, 30_000);
      HttpWork front = new HttpWork(load.vertx(), load.client(512), "127.0.0.1", haproxy.port());
      List<RouterProcess> routers = List.of(cluster.replica(0), cluster.replica(1), cluster.replica(2));
      machine = machine(routers, fleet, haproxy);
      breakdowns.put("3 replicas", new PlacementBreakdown(REPLICAS.stream().map(n -> env.tmp().resolve(n + "-journal.jsonl")).toList()));
      switchPolicy(routers, cluster.clients(), "cache_aware");
      report.layout("3 replicas: " + warmUp(load, progress, routers, front, shapes, smoke).describe());
      for (String workload : shapes.keySet()) {
        for (String policy : policies) {
          switchPolicy(routers, cluster.clients(), policy);
          progress.say("3 replicas " + workload + " 80 % " + policy);
          results.add(measure(fleet, load, front, "3 replicas", workload, shapes.get(workload), policy, 0.8,
              capacities.get(workload).get("least_reserved"), warmS, measureS));
        }
      }
      cluster.close();
    } else if (!haproxyHere) {
      report.note("haproxy is not installed (Debian: apt-get install haproxy): the 3-replica runs were skipped");
    }
    report(report, results, env);
    report.table(breakdownTable);
    report.table(timeTable(results));

    RouterProcess slowRouter = single.alive() ? single : env.own(RouterProcess.start(env, "router-slow",
        policy(SimBench.unbalanced(fleet.fleetFile(env.tmp().resolve("router-slow-journal.jsonl"), 0)), "cache_aware"),
        RouterProcess.Options.serving("--preflight=warn")));
    HttpWork slowClient = slowRouter == single ? singleClient : new HttpWork(load.vertx(), load.client(512), "127.0.0.1", slowRouter.port());
    slowProducer(env, fleet, load, slowRouter, slowClient, shapes.get(PlacementWorkload.SHARED),
        capacities.get(PlacementWorkload.SHARED).get("least_reserved"), smoke ? List.of("cache_aware") : List.of("load", "cache_aware"));
    decisionCpu(report, smoke);
  }

  private Result measure(SimProcess fleet, LoadGenerator load, HttpWork client, String topology, String workload,
                         PlacementWorkload.Shape shape, String policy, double fraction, double capacity, double warmS, double runS) {
    // unique prompts run 3 times as long: their targets are 5 % bounds, and ~20 req/s for 6 s is too few requests
    double measureS = workload.equals(PlacementWorkload.UNIQUE) ? UNIQUE_RUNS * runS : runS;
    PlacementWorkload w = new PlacementWorkload(workload, shape, seed++);
    double rate = fraction * capacity;
    Map<String, JsonObject> before = counters(fleet);
    PlacementBreakdown journal = breakdowns.get(topology);
    if (journal != null) journal.mark();
    ProcessGroups.Sample processesBefore = machine.sample();
    Instant measuredFrom = Instant.now().plusMillis(Math.round(warmS * 1000));
    RunStats stats = load.openLoop(workload + " " + policy, rate, warmS + measureS, 60, () -> client.post(w.path(), w.next(), true, 60_000),
        arrivalSeed(workload, fraction), warmS);
    ProcessGroups.Sample processesAfter = machine.sample();
    Map<String, JsonObject> after = counters(fleet);
    JsonObject time = new JsonObject();
    if (journal != null) {
      JvmProbe.sleep(1_000);
      List<JsonObject> rows = journal.rows();
      PlacementBreakdown.addRows(breakdownTable, topology + ", " + workload + " " + Math.round(fraction * 100) + " % " + policy, rows);
      time.put("processes", ProcessGroups.perRequest(processesBefore, processesAfter, rows.size()))
          .put("router", PlacementBreakdown.medians(rows, measuredFrom));
    }
    double queries = 0;
    double hits = 0;
    List<Double> prefills = new ArrayList<>();
    List<Double> decodes = new ArrayList<>();
    for (EngineFleet.Engine e : fleet.list()) {
      JsonObject a = after.get(e.name());
      JsonObject b = before.get(e.name());
      double requests = a.getDouble("requests") - b.getDouble("requests");
      if (e.role().equals("prefill")) {
        queries += a.getDouble("queries") - b.getDouble("queries");
        hits += a.getDouble("hits") - b.getDouble("hits");
        prefills.add(requests);
      } else {
        decodes.add(requests);
      }
    }
    return new Result(topology, workload, policy, Math.round(fraction * 100) + " %", rate, stats, measureS, queries == 0 ? 0 : hits / queries,
        w.idealHitRate(), imbalance(prefills), imbalance(decodes), time);
  }

  /**
   * Runs every workload through {@code client} until the routers' JIT has settled ({@link JitWarmup}): on two cores C2
   * lags the load by a minute or two, and the 3 replicas, each given a third of the requests, would otherwise be
   * measured less compiled than the one replica they are compared with.
   */
  private JitWarmup.Result warmUp(LoadGenerator load, Progress progress, List<RouterProcess> routers, HttpWork client,
                                  Map<String, PlacementWorkload.Shape> shapes, boolean smoke) {
    List<Work> works = new ArrayList<>();
    for (Map.Entry<String, PlacementWorkload.Shape> e : shapes.entrySet()) {
      PlacementWorkload w = new PlacementWorkload(e.getKey(), e.getValue(), seed++);
      works.add(() -> client.post(w.path(), w.next(), true, 60_000));
    }
    progress.say("JIT warm-up of " + routers.size() + (routers.size() == 1 ? " replica" : " replicas"));
    return JitWarmup.run(load, progress, routers, smoke ? 8 : 16, smoke ? 0.5 : 3, smoke ? 1.5 : WARM_UP_MAX_S, works);
  }

  /**
   * The seed of a run's Poisson arrivals: the same for every policy and topology at one workload and load (common random
   * numbers), so policies are compared on the same arrival times. Near saturation a run's TTFT p50 depends on its
   * bursts more than on placement: with a seed per run, `load` and `cache_aware`, which make the same choices for
   * unique prompts, measured 2.45× and 1.61× least_reserved's p50 in one run at 80 %, and 0.58× and 1.50× at 95 %.
   */
  private static long arrivalSeed(String workload, double fraction) {
    return 22L * 1_000_003L + workload.hashCode() * 31L + Math.round(fraction * 100);
  }

  private static double imbalance(List<Double> counts) {
    double mean = counts.stream().mapToDouble(Double::doubleValue).average().orElse(0);
    return mean == 0 ? Double.NaN : counts.stream().mapToDouble(Double::doubleValue).max().orElse(0) / mean;
  }

  /** Each engine's prefix-cache counters ({@code /metrics}) and requests received ({@code /sim/stats}). */
  private Map<String, JsonObject> counters(EngineFleet fleet) {
    Map<String, JsonObject> out = new LinkedHashMap<>();
    for (EngineFleet.Engine e : fleet.list()) {
      String metrics = get(e.url() + "/metrics");
      JsonObject stats = new JsonObject(get(e.url() + "/sim/stats"));
      out.put(e.name(), new JsonObject().put("queries", sum(metrics, "vllm:prefix_cache_queries_total"))
          .put("hits", sum(metrics, "vllm:prefix_cache_hits_total")).put("requests", stats.getLong("requests").doubleValue()));
    }
    return out;
  }

  static double sum(String metrics, String name) {
    double total = 0;
    for (String line : metrics.split("\n")) {
      if (line.startsWith(name + "{") || line.startsWith(name + " ")) total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
    }
    return total;
  }

  private String get(String url) {
    try {
      return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
    } catch (Exception e) {
      throw new IllegalStateException("GET " + url + ": " + e, e);
    }
  }

  private void post(String url, JsonObject body) {
    try {
      HttpResponse<String> reply = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5))
          .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
          HttpResponse.BodyHandlers.ofString());
      if (reply.statusCode() != 200) throw new IllegalStateException("POST " + url + ": " + reply.statusCode() + " " + reply.body());
    } catch (java.io.IOException e) {
      throw new IllegalStateException("POST " + url + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static SimEngineOptions engine(String name, String role) {
    return SimBench.engine(name, role).setLatencyProfile(PROFILE).setTotalBlocks(KV_BLOCKS).setMaxNumSeqs(MAX_NUM_SEQS)
        .setEnablePromptTokensDetails(true);
  }

  private static JsonObject policy(JsonObject fleet, String policy) {
    return SimBench.set(fleet, "placement", "policy", policy);
  }

  /** Rewrites each router's fleet file with {@code policy} and waits until every one places with it (hot reload). */
  private static void switchPolicy(List<RouterProcess> routers, List<HttpWork> clients, String policy) throws Exception {
    for (RouterProcess router : routers) {
      Path file = router.fleetFile();
      Files.writeString(file, policy(new JsonObject(Files.readString(file)), policy).encodePrettily());
    }
    long deadline = System.nanoTime() + 30_000_000_000L;
    for (HttpWork client : clients) {
      while (true) {
        HttpWork.Reply reply = client.getBlocking("/narwhal/state", 2_000);
        JsonObject placement = reply.status() == 200 ? reply.body().toJsonObject().getJsonObject("placement") : null;
        if (placement != null && policy.equals(placement.getString("policy"))) break;
        if (System.nanoTime() > deadline) throw new IllegalStateException("placement.policy " + policy + " not applied within 30 s");
        JvmProbe.sleep(100);
      }
    }
  }

  private void report(BenchReport report, List<Result> results, BenchEnv env) {
    ResultTable table = new ResultTable("open loop: TTFT and e2e (ms), throughput, producers' prefix-cache hit rate vs the workload's ideal, "
        + "imbalance (most requests on one engine / mean)", "topology", "workload", "load", "policy", "req/s offered", "ok", "failed",
        "TTFT p50", "TTFT p99", "e2e p50", "req/s done", "hit rate", "ideal", "prefill imbalance", "decode imbalance",
        "TTFT p50 × least_reserved");
    JsonArray raw = new JsonArray();
    for (Result r : results) {
      Result base = find(results, r.topology(), r.workload(), r.load(), "least_reserved");
      table.row(r.topology(), r.workload(), r.load(), r.policy(), Fmt.rate(r.rate()), r.stats().ok(), r.stats().errors(),
          Fmt.pct(r.stats().firstToken(), 50), Fmt.pct(r.stats().firstToken(), 99), Fmt.pct(r.stats().latency(), 50),
          Fmt.rate(done(r)), Fmt.percent(r.hitRate(), 1), Fmt.percent(r.ideal(), 1), Fmt.num(r.prefillImbalance(), 2),
          Fmt.num(r.decodeImbalance(), 2), base == null ? "—" : Fmt.ratio(ttft(r, 50) / ttft(base, 50)));
      raw.add(new JsonObject().put("topology", r.topology()).put("workload", r.workload()).put("load", r.load()).put("policy", r.policy())
          .put("rate", r.rate()).put("stats", r.stats().toJson()).put("hit_rate", r.hitRate()).put("ideal", r.ideal())
          .put("prefill_imbalance", r.prefillImbalance()).put("decode_imbalance", r.decodeImbalance()).put("time", r.time()));
      r.stats().errorSamples().forEach(s -> report.note(r.topology() + " " + r.workload() + " " + r.policy() + ": " + s));
    }
    report.table(table);
    report.raw("runs", raw);

    Map<String, Map<String, Double>> ttftByLoad = new LinkedHashMap<>();
    Map<String, Map<String, Double>> hitByWorkload = new LinkedHashMap<>();
    for (Result r : results) {
      if (r.topology().equals("1 replica") && r.workload().equals(PlacementWorkload.SHARED)) {
        ttftByLoad.computeIfAbsent(r.policy(), k -> new LinkedHashMap<>()).put(r.load(), ttft(r, 50));
      }
      if (r.topology().equals("1 replica") && r.load().equals("80 %")) {
        hitByWorkload.computeIfAbsent(r.policy(), k -> new LinkedHashMap<>()).put(r.workload(), 100 * r.hitRate());
        hitByWorkload.computeIfAbsent("ideal", k -> new LinkedHashMap<>()).put(r.workload(), 100 * r.ideal());
      }
    }
    String suffix = env.smoke() ? "-smoke" : "";
    report.chart(ChartWriter.categoryLines(env.out().resolve("placement-ttft" + suffix + ".png"),
        "Shared prefix, 1 replica: TTFT p50 by load", "load (share of least_reserved's capacity)", "TTFT p50 (ms)", ttftByLoad));
    report.chart(ChartWriter.bars(env.out().resolve("placement-hit-rate" + suffix + ".png"),
        "Producers' prefix-cache hit rate at 80 % load (1 replica)", "workload", "hit rate (%)", hitByWorkload));

    Result sharedLr = find(results, "1 replica", PlacementWorkload.SHARED, "80 %", "least_reserved");
    Result sharedCa = find(results, "1 replica", PlacementWorkload.SHARED, "80 %", "cache_aware");
    if (sharedLr != null && sharedCa != null) {
      double p50 = ttft(sharedCa, 50) / ttft(sharedLr, 50);
      double p99 = ttft(sharedCa, 99) / ttft(sharedLr, 99);
      report.verdict(Verdict.perf("I22", "shared prefix, 80 %: cache_aware TTFT p50 / least_reserved's", Fmt.ratio(p50), "≤ 0.33×", p50 <= 1 / 3.0));
      report.verdict(Verdict.perf("I22", "shared prefix, 80 %: cache_aware TTFT p99 / least_reserved's", Fmt.ratio(p99), "≤ 0.50×", p99 <= 0.5));
      double share = sharedCa.hitRate() / sharedCa.ideal();
      report.verdict(Verdict.perf("I22", "shared prefix, 80 %: cache_aware hit rate / ideal", Fmt.percent(sharedCa.hitRate(), 1) + " / "
          + Fmt.percent(sharedCa.ideal(), 1) + " = " + Fmt.percent(share, 0), "≥ 90 %", share >= 0.9));
    }
    Result uniqueLr = find(results, "1 replica", PlacementWorkload.UNIQUE, "80 %", "least_reserved");
    Result uniqueCa = find(results, "1 replica", PlacementWorkload.UNIQUE, "80 %", "cache_aware");
    if (uniqueLr != null && uniqueCa != null) {
      double p50 = ttft(uniqueCa, 50) / ttft(uniqueLr, 50);
      double done = done(uniqueCa) / done(uniqueLr);
      report.verdict(Verdict.perf("I22", "no sharing, 80 %: cache_aware TTFT p50 / least_reserved's", Fmt.ratio(p50), "≤ 1.05×", p50 <= 1.05));
      report.verdict(Verdict.perf("I22", "no sharing, 80 %: cache_aware throughput / least_reserved's", Fmt.ratio(done), "≥ 0.95×", done >= 0.95));
    }
    Result three = find(results, "3 replicas", PlacementWorkload.SHARED, "80 %", "cache_aware");
    if (three != null && sharedCa != null) {
      double hit = three.hitRate() / sharedCa.hitRate();
      double p50 = ttft(three, 50) / ttft(sharedCa, 50);
      report.verdict(Verdict.perf("I22", "shared prefix, 80 %, cache_aware: 3 replicas' hit rate / 1 replica's", Fmt.ratio(hit), "≥ 0.90×", hit >= 0.9));
      report.verdict(Verdict.perf("I22", "shared prefix, 80 %, cache_aware: 3 replicas' TTFT p50 / 1 replica's", Fmt.ratio(p50), "≤ 1.10×", p50 <= 1.1));
    }
    Result oneBehind = find(results, "1 replica, haproxy", PlacementWorkload.SHARED, "80 %", "cache_aware");
    if (three != null && oneBehind != null) {
      double p50 = ttft(three, 50) / ttft(oneBehind, 50);
      report.verdict(Verdict.info("I22", "shared prefix, 80 %, cache_aware: 3 replicas' TTFT p50 / 1 replica's behind the same haproxy",
          Fmt.ratio(p50)));
    }
  }

  private static ProcessGroups machine(List<RouterProcess> routers, SimProcess engines, HaproxyProcess balancer) {
    ProcessGroups groups = new ProcessGroups().add("routers", routers.stream().map(RouterProcess::pid).toList())
        .add("engines", List.of(engines.pid())).add("load generator", List.of(ProcessHandle.current().pid()));
    return balancer == null ? groups : groups.add("haproxy", List.of(balancer.pid()));
  }

  /**
   * Where a shared-prefix request's time went at 80 %, per topology: the client's TTFT beside the router's own (its
   * journal: arrival to the first byte sent, and to the end of the prefill), and each group of processes' CPU and
   * time waiting for a core per request. What the 3 replicas add over 1 shows as routers' CPU and wait, not as
   * placement (the prefix hit the same).
   */
  private static ResultTable timeTable(List<Result> results) {
    List<String> groups = List.of("routers", "engines", "load generator", "haproxy");
    List<String> columns = new ArrayList<>(List.of("topology", "policy", "requests", "client TTFT p50", "router first byte p50",
        "router prefill p50"));
    for (String g : groups) {
      columns.add(g + " CPU");
      columns.add(g + " core wait");
    }
    ResultTable table = new ResultTable("where a request's time goes: shared prefix, 80 %; the router's medians from its journal "
        + "(requests of the measured window), ms; CPU and core wait (runnable, waiting for a core: /proc/<pid>/task/*/schedstat) "
        + "of each group of processes over the whole run, ms per request", columns.toArray(String[]::new));
    for (Result r : results) {
      if (!r.workload().equals(PlacementWorkload.SHARED) || !r.load().equals("80 %") || !r.time().containsKey("router")) continue;
      JsonObject router = r.time().getJsonObject("router");
      JsonObject processes = r.time().getJsonObject("processes");
      List<Object> row = new ArrayList<>(List.of(r.topology(), r.policy(), router.getInteger("requests"), Fmt.pct(r.stats().firstToken(), 50),
          Fmt.num(router.getDouble("first_byte_ms"), 1), Fmt.num(router.getDouble("prefill_ms"), 1)));
      for (String g : groups) {
        JsonObject of = processes.getJsonObject(g);
        row.add(of == null ? "—" : Fmt.num(of.getDouble("cpu_ms"), 2));
        row.add(of == null ? "—" : Fmt.num(of.getDouble("wait_ms"), 2));
      }
      table.row(row.toArray());
    }
    return table;
  }

  private static double ttft(Result r, double q) {
    return r.stats().firstToken().percentile(q) / 1e6;
  }

  private static double done(Result r) {
    return r.stats().ok() / r.seconds();
  }

  private static Result find(List<Result> results, String topology, String workload, String load, String policy) {
    return results.stream().filter(r -> r.topology().equals(topology) && r.workload().equals(workload) && r.load().equals(load)
        && r.policy().equals(policy)).findFirst().orElse(null);
  }

  /**
   * Shared prefix at 80 % under each policy; after a warm-up P0 is made 5× slower. P0's share of the prefills the
   * producers received, sampled every 250 ms, from two reading intervals (2 s) after the slowdown to the end.
   */
  private void slowProducer(BenchEnv env, SimProcess fleet, LoadGenerator load, RouterProcess router, HttpWork client,
                            PlacementWorkload.Shape shape, double capacity, List<String> policies) throws Exception {
    BenchReport report = env.report();
    double beforeS = env.smoke() ? 1 : 3;
    double afterS = env.smoke() ? 3 : 8;
    ResultTable table = new ResultTable("P0 made 5× slower (POST /sim/slowdown) after " + beforeS + " s, shared prefix at 80 %: "
        + "P0's share of the prefills", "policy", "before", "first 2 s after", "from 2 s after to the end", "TTFT p50 ms", "TTFT p99 ms");
    Map<String, List<double[]>> series = new LinkedHashMap<>();
    String p0 = fleet.list().stream().filter(e -> e.name().equals("P0")).findFirst().orElseThrow().url();
    for (String policy : policies) {
      switchPolicy(List.of(router), List.of(client), policy);
      env.progress().say("slow producer, " + policy);
      PlacementWorkload w = new PlacementWorkload(PlacementWorkload.SHARED, shape, seed++);
      long runSeed = arrivalSeed("slow-producer", 0.8);
      CompletableFuture<RunStats> run = CompletableFuture.supplyAsync(() -> load.openLoop("slow " + policy, 0.8 * capacity,
          beforeS + afterS, 60, () -> client.post(w.path(), w.next(), true, 60_000), runSeed, 0));
      long t0 = System.nanoTime();
      List<double[]> samples = new ArrayList<>();
      boolean slowed = false;
      while (!run.isDone()) {
        double t = (System.nanoTime() - t0) / 1e9;
        if (!slowed && t >= beforeS) {
          post(p0 + "/sim/slowdown", new JsonObject().put("factor", 5));
          slowed = true;
        }
        Map<String, JsonObject> now = counters(fleet);
        double all = 0;
        for (EngineFleet.Engine e : fleet.list()) if (e.role().equals("prefill")) all += now.get(e.name()).getDouble("requests");
        samples.add(new double[] {t, now.get("P0").getDouble("requests"), all});
        JvmProbe.sleep(250);
      }
      RunStats stats = run.get();
      post(p0 + "/sim/slowdown", new JsonObject().put("factor", 1));
      double before = share(samples, 0, beforeS);
      double early = share(samples, beforeS, beforeS + 2);
      double late = share(samples, beforeS + 2, beforeS + afterS);
      table.row(policy, Fmt.percent(before, 0), Fmt.percent(early, 0), Fmt.percent(late, 0), Fmt.pct(stats.firstToken(), 50),
          Fmt.pct(stats.firstToken(), 99));
      List<double[]> points = new ArrayList<>();
      for (int i = 4; i < samples.size(); i += 2) {
        double[] a = samples.get(i - 4);
        double[] b = samples.get(i);
        if (b[2] > a[2]) points.add(new double[] {b[0] - beforeS, 100 * (b[1] - a[1]) / (b[2] - a[2])});
      }
      series.put(policy, points);
      report.verdict(Verdict.perf("I22", "P0 5× slower, " + policy + ": its share of prefills from 2 reading intervals after",
          Fmt.percent(late, 1), "≤ 20 %", late <= 0.2));
    }
    report.table(table);
    report.chart(ChartWriter.timeSeries(env.out().resolve("placement-slow-producer" + (env.smoke() ? "-smoke" : "") + ".png"),
        "P0 made 5× slower at t = 0: its share of the prefills (1 s windows)", "seconds since the slowdown",
        List.of(new ChartWriter.Panel("P0's share (%)", series))));
  }

  /** P0's share of the prefills received between {@code fromS} and {@code toS}. */
  private static double share(List<double[]> samples, double fromS, double toS) {
    double[] first = null;
    double[] last = null;
    for (double[] s : samples) {
      if (s[0] >= fromS && first == null) first = s;
      if (s[0] <= toS) last = s;
    }
    if (first == null || last == null || last[2] <= first[2]) return Double.NaN;
    return (last[1] - first[1]) / (last[2] - first[2]);
  }

  private static void decisionCpu(BenchReport report, boolean smoke) {
    int requests = smoke ? 5_000 : 200_000;
    ResultTable table = new ResultTable("CPU per placement decision (cache_aware, PlacementTable alone, thread CPU time over "
        + requests + " requests of one prefill and one decode decision, each released)", "engines", "µs per decision");
    double at256 = Double.NaN;
    for (int engines : List.of(8, 64, 256)) {
      double us = DecisionCpu.nanosPerDecision(engines, requests) / 1000;
      if (engines == 256) at256 = us;
      table.row(engines, Fmt.num(us, 2));
    }
    report.table(table);
    report.verdict(Verdict.perf("I22", "CPU per placement decision at 256 engines", Fmt.num(at256, 2) + " µs", "≤ 20 µs", at256 <= 20));
    report.verdict(Verdict.info("I22", "relay and overhead (P2, P4) within 5 % of before", "not measured here: run `bench relay` and `bench overhead`"));
  }
}
