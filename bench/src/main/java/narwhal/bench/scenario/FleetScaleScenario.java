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
import narwhal.bench.probe.EngineReads;
import narwhal.bench.probe.ReplicaReads;
import narwhal.bench.probe.JitWarmup;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.FreePort;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.process.SimProcess;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.sim.SimEngineOptions;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Issue 43's fleet-scale benchmark (P10, P11). For each fleet size, many simulated engines in one simulator process (one in
 * {@link #PREFILL_EVERY} a producer, the rest consumers) and 3 clustered replicas in front of them, each started as an
 * operator starts one ({@code serve --cluster --preflight=skip}): each replica's start to ready ({@code /ready} 200: the
 * first, then two joining it); after a warm-up with no client traffic, each replica's CPU and the reads every engine
 * received from the three together ({@code /metrics}, {@code /health}, {@code /v1/models}: the simulator's own counters);
 * then, after a wait for the replicas' JIT compilers to settle ({@link JitWarmup#awaitIdle}, bounded), each replica's idle
 * CPU again; then light streaming load spread over the replicas, and each engine's {@code /metrics} reads per second
 * against one per {@code placement.metrics_interval_s}; then each replica's idle CPU once more, after the busy phase.
 * The project's rule is CPU after the JIT has settled, and with no traffic it does not within minutes (an idle
 * replica's code reaches the compile thresholds slowly: its compilers were still 20–60 % of its CPU after 180 s), while
 * a load compiles what serving runs in seconds: P10's verdict takes the idle CPU after serving, as a router that served
 * and went quiet. A fleet size that cannot be run is reported as failed, and the next one runs.
 */
public final class FleetScaleScenario implements Scenario {
  /** 8 engines: P10's baseline, the same run at a small fleet. */
  static final List<Integer> FLEETS = List.of(8, 64, 256, 1000);
  static final List<Integer> SMOKE_FLEETS = List.of(16);
  static final List<String> REPLICAS = List.of("A", "B", "C");
  /** One engine in this many is a producer (prefill). */
  static final int PREFILL_EVERY = 8;
  static final double METRICS_INTERVAL_S = 1;
  static final double IDLE_TARGET_SMALL = 0.02;
  static final int SMALL_FLEET = 64;
  static final double IDLE_TARGET_LARGE = 0.10;
  static final int LARGE_FLEET = 1000;
  static final long READY_TARGET_MS = 5_000;
  /** How long a replica may take from its start to {@code /ready} 200 before its fleet size is reported as failed. */
  static final long READY_WAIT_MS = 180_000;
  static final int STREAM_TOKENS = 32;
  static final double ITL_MS = 20;
  static final List<String> JVM = List.of("-Xmx1g");
  /**
   * The ports a replica looks for the others on, from the cluster's port up (conf/cluster.xml's
   * {@code hazelcast.tcp.join.port.try.count}). With a thousand simulated engines listening on ephemeral ports, the ones
   * after a free ephemeral port are often an engine's, and a replica whose join meets one never finished starting (300 s,
   * a run of 2026-12-06): the cluster's port is taken below the ephemeral range instead.
   */
  static final int JOIN_PORTS = 10;

  /**
   * The idle replicas' JIT has settled when, over a slice, each one's compiler threads used at most this share of its
   * CPU. Lower than {@link JitWarmup#QUIET_SHARE}'s 3 % of a loaded router: an idle replica's CPU is a few % of a core,
   * and its compilers' last few milliseconds a second are a large share of that for minutes.
   */
  static final double IDLE_JIT_QUIET_SHARE = 0.10;

  /** How long each phase lasts: the full run's, or seconds-long for the smoke. */
  record Phases(double warmUpS, double idleS, double jitSliceS, double jitMaxS, double busyWarmS, double busyS, int streams,
                double quietS) {
    static Phases of(boolean smoke) {
      return smoke ? new Phases(3, 5, 2, 4, 1, 4, 6, 2) : new Phases(60, 60, 10, 60, 5, 30, 24, 30);
    }
  }

  /** What one fleet size measured; a field stays unset (NaN, null) when the run failed before it. */
  static final class FleetRun {
    final int engines;
    final long[] readyMs = {-1, -1, -1};
    Cpu idle = Cpu.empty();
    /** The same replicas idle again once their JIT settled (or the wait's bound came). */
    Cpu settled = Cpu.empty();
    /** The same replicas idle once more, after the busy phase: the load has compiled what serving runs. */
    Cpu afterBusy = Cpu.empty();
    JitWarmup.IdleResult jit;
    double simCores = Double.NaN;
    double idleS = Double.NaN;
    Map<String, EngineReads.Rate> idleReads;
    double busyS = Double.NaN;
    Map<String, EngineReads.Rate> busyReads;
    /** The most read engine's busy readings as each replica counted them, "A / B / C". */
    String busiestByReplica = "?";
    RunStats busy;
    String failure;

    FleetRun(int engines) {
      this.engines = engines;
    }
  }

  @Override
  public String name() {
    return "fleet-scale";
  }

  @Override
  public String summary() {
    return "P10, P11: 3 clustered replicas in front of 8 to 1,000 engines: start to ready, idle CPU, reads per engine idle and busy";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    BenchReport report = env.report();
    Phases phases = Phases.of(env.smoke());
    List<Integer> fleets = env.options().levels(FLEETS, SMOKE_FLEETS);
    LoadGenerator load = env.own(new LoadGenerator());
    HttpClientAgent statsClient = load.client(1);
    report.layout("engines: one simulator JVM (java -cp narwhal-tools.jar) per fleet size, one engine in " + PREFILL_EVERY
            + " a producer, the rest consumers, " + STREAM_TOKENS + "-token streams, tokens " + Fmt.num(ITL_MS, 0) + " ms apart")
        .layout("router: 3 replicas A B C, each `java " + String.join(" ", JVM) + " -jar narwhal.jar serve --fleet FILE --cluster "
            + "--preflight=skip --set cluster.port=P`, a cluster of their own on 127.0.0.1 (P below the ephemeral ports the engines "
            + "listen on), placement.metrics_interval_s "
            + METRICS_INTERVAL_S + ", other keys at their defaults; started one after the other, each once the one before is ready")
        .layout("idle: no client traffic; " + phases.warmUpS() + " s after the three are ready, each process's CPU (/proc/<pid>/stat) and "
            + "every engine's reads (the simulator's /sim/stats reads) over " + phases.idleS() + " s")
        .layout("idle, JIT settled: still no traffic; then, in slices of " + phases.jitSliceS() + " s for at most " + phases.jitMaxS()
            + " s, until each replica's JIT compiler threads used at most " + Fmt.percent(IDLE_JIT_QUIET_SHARE, 0)
            + " of its CPU over a slice, and each replica's CPU over " + phases.idleS() + " s more")
        .layout("busy: " + phases.streams() + " closed-loop streaming clients spread over the 3 replicas, " + phases.busyWarmS()
            + " s then " + phases.busyS() + " s measured")
        .layout("idle after serving: " + phases.quietS() + " s after the busy phase (the engines' readings back to the idle cadence), "
            + "each replica's CPU over " + phases.idleS() + " s (P10's verdict)")
        .layout("bench process: the load generator and the readers of /sim/stats; all on one 2-core machine shared with other "
            + "helpers' builds and tests");
    report.parameter("fleets", fleets).parameter("warm_up_s", phases.warmUpS()).parameter("idle_s", phases.idleS())
        .parameter("jit_settle_max_s", phases.jitMaxS()).parameter("jit_quiet_share", IDLE_JIT_QUIET_SHARE)
        .parameter("busy_s", phases.busyS()).parameter("streams", phases.streams()).parameter("quiet_s", phases.quietS());

    List<FleetRun> runs = new ArrayList<>();
    for (int engines : fleets) {
      FleetRun run = new FleetRun(engines);
      runs.add(run);
      try {
        measure(env, load, statsClient, phases, run);
      } catch (RuntimeException e) {
        run.failure = e.getMessage();
        report.note(engines + " engines: failed: " + e.getMessage());
      }
    }
    tables(report, runs, phases);
    verdicts(report, runs, phases);
  }

  private static void measure(BenchEnv env, LoadGenerator load, HttpClientAgent statsClient, Phases phases, FleetRun run) {
    int n = run.engines;
    String label = n + " engines: ";
    env.progress().say(label + "starting the simulator");
    SimProcess sim = env.own(SimProcess.start(env, "fleet-" + n, engines(n), n > 256 ? "2g" : "1g"));
    ClusterReplicas cluster = null;
    try {
      int clusterPort = FreePort.runBelowEphemeral(JOIN_PORTS);
      cluster = ClusterReplicas.prepare(env, sim, load, FleetScaleScenario::tune, REPLICAS.stream().map(r -> r + "-" + n).toList(),
          false, false);
      for (int i = 0; i < REPLICAS.size(); i++) {
        env.progress().say(label + "starting replica " + REPLICAS.get(i));
        cluster.start(i, replica(clusterPort));
        run.readyMs[i] = awaitReady(cluster, i);
      }
      cluster.awaitMembers(REPLICAS.size(), READY_WAIT_MS);
      env.progress().say(label + "all ready (" + Arrays.toString(run.readyMs) + " ms); " + phases.warmUpS() + " s of warm-up");
      JvmProbe.sleep(Math.round(phases.warmUpS() * 1000));
      idle(load, statsClient, sim, cluster, phases, run);
      env.progress().say(label + "idle: replicas at " + run.idle.each()
          + " of a core; waiting for their JIT to settle");
      run.jit = JitWarmup.awaitIdle(env.progress(), cluster.replicas(), phases.jitSliceS(), phases.jitMaxS(), IDLE_JIT_QUIET_SHARE);
      run.settled = cpuOver(cluster, () -> JvmProbe.sleep(Math.round(phases.idleS() * 1000)));
      env.progress().say(label + run.jit.describe() + "; idle then: " + run.settled.each() + " of a core; busy phase");
      busy(load, statsClient, sim, cluster, phases, run);
      env.progress().say(label + "busy done; " + phases.quietS() + " s for the readings to fall back to the idle cadence, then idle again");
      JvmProbe.sleep(Math.round(phases.quietS() * 1000));
      run.afterBusy = cpuOver(cluster, () -> JvmProbe.sleep(Math.round(phases.idleS() * 1000)));
      env.progress().say(label + "idle after busy: " + run.afterBusy.each() + " of a core");
    } finally {
      if (cluster != null) cluster.close();
      sim.close();
    }
  }

  /** How a replica starts: as an operator would, its cluster's port set on the command line. */
  private static RouterProcess.Options replica(int clusterPort) {
    return new RouterProcess.Options(JVM, false, false, List.of("--cluster", "--preflight=skip", "--set", "cluster.port=" + clusterPort));
  }

  private static List<SimEngineOptions> engines(int n) {
    List<SimEngineOptions> out = new ArrayList<>();
    int producers = Math.max(1, n / PREFILL_EVERY);
    for (int i = 0; i < producers; i++) out.add(SimBench.engine("P" + i, "prefill").setItlMs(ITL_MS));
    for (int i = 0; i < n - producers; i++) out.add(SimBench.engine("D" + i, "decode").setItlMs(ITL_MS));
    return out;
  }

  private static JsonObject tune(JsonObject fleet) {
    return SimBench.set(SimBench.unbalanced(fleet), "placement", "metrics_interval_s", METRICS_INTERVAL_S);
  }

  /** Polls replica {@code i}'s {@code /ready} until 200; returns the ms from its process start. */
  private static long awaitReady(ClusterReplicas cluster, int i) {
    RouterProcess router = cluster.replica(i);
    long deadline = router.startedNanos() + READY_WAIT_MS * 1_000_000;
    String last = "no answer";
    while (System.nanoTime() < deadline) {
      try {
        HttpWork.Reply reply = cluster.client(i).getBlocking("/ready", 2_000);
        if (reply.status() == 200) return (System.nanoTime() - router.startedNanos()) / 1_000_000;
        last = reply.status() + " " + reply.body();
      } catch (RuntimeException e) {
        last = e.getMessage();
      }
      JvmProbe.sleep(10);
    }
    throw new IllegalStateException(cluster.name(i) + " not ready within " + READY_WAIT_MS + " ms of its start; its last /ready: "
        + last + " (log: " + router.log() + ")");
  }

  /** Each replica's CPU and its compiler threads' over one window, in cores. */
  record Cpu(double[] cores, double[] jit) {
    static Cpu empty() {
      return new Cpu(new double[] {Double.NaN, Double.NaN, Double.NaN}, new double[] {Double.NaN, Double.NaN, Double.NaN});
    }

    double most() {
      return Arrays.stream(cores).max().orElse(Double.NaN);
    }

    double mostJit() {
      return Arrays.stream(jit).max().orElse(Double.NaN);
    }

    String each() {
      return pct(cores[0]) + ", " + pct(cores[1]) + ", " + pct(cores[2]);
    }
  }

  /** Runs {@code during} (a sleep, or sweeps around one) and measures each replica's CPU over it. */
  private static Cpu cpuOver(ClusterReplicas cluster, Runnable during) {
    double[] cpu = new double[REPLICAS.size()];
    double[] jit = new double[REPLICAS.size()];
    for (int i = 0; i < cpu.length; i++) {
      cpu[i] = cluster.replica(i).cpuSeconds();
      jit[i] = cluster.replica(i).compilerCpuSeconds();
    }
    long t0 = System.nanoTime();
    during.run();
    double wall = (System.nanoTime() - t0) / 1e9;
    for (int i = 0; i < cpu.length; i++) {
      cpu[i] = (cluster.replica(i).cpuSeconds() - cpu[i]) / wall;
      jit[i] = (cluster.replica(i).compilerCpuSeconds() - jit[i]) / wall;
    }
    return new Cpu(cpu, jit);
  }

  private static void idle(LoadGenerator load, HttpClientAgent statsClient, SimProcess sim, ClusterReplicas cluster, Phases phases,
                           FleetRun run) {
    double simCpu = sim.cpuSeconds();
    long t0 = System.nanoTime();
    EngineReads[] sweeps = new EngineReads[2];
    run.idle = cpuOver(cluster, () -> {
      sweeps[0] = EngineReads.sweep(load, statsClient, sim);
      JvmProbe.sleep(Math.round(phases.idleS() * 1000));
      sweeps[1] = EngineReads.sweep(load, statsClient, sim);
    });
    run.simCores = (sim.cpuSeconds() - simCpu) / ((System.nanoTime() - t0) / 1e9);
    run.idleS = sweeps[1].secondsSince(sweeps[0]);
    run.idleReads = sweeps[1].since(sweeps[0]);
  }

  private static void busy(LoadGenerator load, HttpClientAgent statsClient, SimProcess sim, ClusterReplicas cluster, Phases phases,
                           FleetRun run) {
    Buffer body = Bodies.completion(STREAM_TOKENS, true).toBuffer();
    List<HttpWork> clients = cluster.clients();
    AtomicInteger next = new AtomicInteger();
    EngineReads[] sweeps = new EngineReads[2];
    ReplicaReads[] counted = new ReplicaReads[2];
    run.busy = load.closedLoop(run.engines + " engines busy", phases.streams(), phases.busyWarmS(), phases.busyS(), 30,
        () -> clients.get(Math.floorMod(next.getAndIncrement(), clients.size())).post("/v1/completions", body, true, 30_000),
        new LoadGenerator.Window() {
          @Override
          public void opened() {
            sweeps[0] = EngineReads.sweep(load, statsClient, sim);
            counted[0] = ReplicaReads.scrape(clients);
          }

          @Override
          public void closed() {
            sweeps[1] = EngineReads.sweep(load, statsClient, sim);
            counted[1] = ReplicaReads.scrape(clients);
          }
        });
    run.busyS = sweeps[1].secondsSince(sweeps[0]);
    run.busyReads = sweeps[1].since(sweeps[0]);
    run.busiestByReplica = counted[1].since(counted[0], run.busyReads.get("metrics").busiest());
  }

  private static void tables(BenchReport report, List<FleetRun> runs, Phases phases) {
    ResultTable ready = new ResultTable("start to ready: ms from each replica's process start to its /ready answering 200 "
        + "(A alone, then B and C joining it)", "engines", "A (first)", "B (joining)", "C (joining)", "failed");
    ResultTable idle = new ResultTable("idle: CPU over " + phases.idleS() + " s, " + phases.warmUpS()
        + " s after all three were ready, % of one core", "engines", "A", "B", "C", "of which JIT (most of the three)", "simulator");
    ResultTable settled = new ResultTable("idle once the JIT settled: CPU over " + phases.idleS() + " s after each replica's "
        + "compilers used at most " + Fmt.percent(IDLE_JIT_QUIET_SHARE, 0) + " of its CPU over a " + phases.jitSliceS()
        + " s slice (waited at most " + phases.jitMaxS() + " s), % of one core", "engines", "A", "B", "C",
        "of which JIT (most of the three)", "waited s", "settled");
    ResultTable afterBusy = new ResultTable("idle after serving: CPU over " + phases.idleS() + " s, " + phases.quietS()
        + " s after the busy phase ended (what serving runs compiled by the load), % of one core", "engines", "A", "B", "C",
        "of which JIT (most of the three)");
    ResultTable idleReads = new ResultTable("idle: requests per second each engine received from the 3 replicas together "
        + "(mean over the engines / the most one engine got)", "engines", "/metrics mean", "/metrics max", "/health mean", "/health max",
        "/v1/models mean", "/v1/models max", "window s");
    ResultTable busy = new ResultTable("busy: " + phases.streams() + " streaming clients over the 3 replicas; /metrics reads each "
        + "engine received from the 3 together", "engines", "ok", "failed", "req/s", "TTFT p50 ms", "/metrics mean /s", "/metrics max /s",
        "most reads of one engine", "its readings by A / B / C", "allowed (one per " + Fmt.num(METRICS_INTERVAL_S, 0) + " s, +1)", "window s");
    for (FleetRun r : runs) {
      ready.row(r.engines, ms(r.readyMs[0]), ms(r.readyMs[1]), ms(r.readyMs[2]), r.failure == null ? "" : r.failure);
      idle.row(r.engines, pct(r.idle.cores()[0]), pct(r.idle.cores()[1]), pct(r.idle.cores()[2]), pct(r.idle.mostJit()), pct(r.simCores));
      afterBusy.row(r.engines, pct(r.afterBusy.cores()[0]), pct(r.afterBusy.cores()[1]), pct(r.afterBusy.cores()[2]), pct(r.afterBusy.mostJit()));
      settled.row(r.engines, pct(r.settled.cores()[0]), pct(r.settled.cores()[1]), pct(r.settled.cores()[2]),
          pct(r.settled.mostJit()), r.jit == null ? "—" : Fmt.num(r.jit.seconds(), 0),
          r.jit == null ? "—" : (r.jit.settled() ? "yes" : "no") + " (" + Fmt.percent(r.jit.worstShare(), 1) + ")");
      if (r.idleReads != null) {
        idleReads.row(r.engines, rate(r.idleReads, "metrics", false), rate(r.idleReads, "metrics", true), rate(r.idleReads, "health", false),
            rate(r.idleReads, "health", true), rate(r.idleReads, "models", false), rate(r.idleReads, "models", true), Fmt.num(r.idleS, 1));
      }
      if (r.busyReads != null) {
        EngineReads.Rate m = r.busyReads.get("metrics");
        busy.row(r.engines, r.busy.ok(), r.busy.errors(), Fmt.rate(r.busy.rps()), Fmt.pct(r.busy.firstToken(), 50), Fmt.num(m.mean(), 3),
            Fmt.num(m.max(), 3), m.maxCount() + " (" + m.busiest() + ")", r.busiestByReplica, allowed(r.busyS), Fmt.num(r.busyS, 1));
        r.busy.errorSamples().forEach(s -> report.note(r.engines + " engines, busy: " + s));
      }
    }
    report.table(ready).table(idle).table(settled).table(idleReads).table(busy).table(afterBusy);
  }

  private static void verdicts(BenchReport report, List<FleetRun> runs, Phases phases) {
    for (FleetRun r : runs) {
      String at = " (" + r.engines + " engines)";
      long joining = Math.max(r.readyMs[1], r.readyMs[2]);
      boolean joined = r.readyMs[1] >= 0 && r.readyMs[2] >= 0;
      report.verdict(Verdict.perf("P11", "first replica's start to ready" + at, measured(r.readyMs[0], r), "≤ " + READY_TARGET_MS + " ms",
          r.readyMs[0] >= 0 && r.readyMs[0] <= READY_TARGET_MS));
      report.verdict(Verdict.perf("P11", "joining replicas' start to ready, the slower of B and C" + at, joined ? joining + " ms" : failed(r),
          "≤ " + READY_TARGET_MS + " ms", joined && joining <= READY_TARGET_MS));
      double early = r.idle.most();
      report.verdict(Verdict.info("P10", "idle CPU per replica, the most of the three, " + Fmt.num(phases.warmUpS(), 0)
          + " s after ready (the JIT still compiling; the figure before the settled one was measured)" + at,
          Double.isNaN(early) ? failed(r) : pct(early) + " (" + r.idle.each() + ")"));
      double waited = r.settled.most();
      report.verdict(Verdict.info("P10", "idle CPU per replica after the JIT wait with no traffic, the most of the three" + at,
          Double.isNaN(waited) ? failed(r) : pct(waited) + " (" + r.settled.each() + "; compilers " + pct(r.settled.mostJit()) + ")"
              + (r.jit != null && !r.jit.settled() ? "; JIT not settled within " + Fmt.num(r.jit.seconds(), 0) + " s" : "")));
      double most = r.afterBusy.most();
      String idle = Double.isNaN(most) ? failed(r) : pct(most) + " (" + r.afterBusy.each() + "; compilers " + pct(r.afterBusy.mostJit()) + ")";
      String what = "idle CPU per replica after serving (the JIT settled by the load), the most of the three" + at;
      if (r.engines <= SMALL_FLEET) {
        report.verdict(Verdict.perf("P10", what, idle, "≤ " + pct(IDLE_TARGET_SMALL), most <= IDLE_TARGET_SMALL));
      } else if (r.engines >= LARGE_FLEET) {
        report.verdict(Verdict.perf("P10", what, idle, "≤ " + pct(IDLE_TARGET_LARGE), most <= IDLE_TARGET_LARGE));
      } else {
        report.verdict(Verdict.info("P10", what, idle));
      }
      if (r.busyReads != null) {
        EngineReads.Rate m = r.busyReads.get("metrics");
        report.verdict(Verdict.perf("P10", "busy: /metrics reads of the most read engine, all replicas together" + at,
            m.maxCount() + " in " + Fmt.num(r.busyS, 1) + " s (" + Fmt.num(m.max(), 2) + "/s, " + m.busiest() + ")",
            "≤ " + allowed(r.busyS), m.maxCount() <= allowedReads(r.busyS)));
      } else {
        report.verdict(Verdict.perf("P10", "busy: /metrics reads of the most read engine, all replicas together" + at, failed(r),
            "one per " + Fmt.num(METRICS_INTERVAL_S, 0) + " s", false));
      }
    }
    FleetRun smallest = runs.get(0);
    FleetRun largest = runs.get(runs.size() - 1);
    if (runs.size() > 1 && smallest.failure == null && largest.failure == null) {
      double a = Arrays.stream(smallest.afterBusy.cores()).average().orElse(Double.NaN);
      double b = Arrays.stream(largest.afterBusy.cores()).average().orElse(Double.NaN);
      report.verdict(Verdict.info("P10", "idle CPU per replica after serving (mean of three) at " + largest.engines + " engines / at " + smallest.engines,
          Fmt.ratio(b / a) + " (" + pct(b) + " / " + pct(a) + ")"));
    }
    report.verdict(Verdict.info("I22", "3 replicas' TTFT p50 within 10 % of 1 replica's (issue 43 lists it under fleet-scale)",
        "not measured here: `bench placement` measures it (3 replicas behind haproxy against 1, on the same loaded engines)"));
  }

  /** The most reads one engine may get in {@code seconds} at one per interval: one per whole interval, and one more at an edge. */
  private static long allowedReads(double seconds) {
    return (long) Math.floor(seconds / METRICS_INTERVAL_S) + 1;
  }

  private static String allowed(double seconds) {
    return Double.isNaN(seconds) ? "—" : allowedReads(seconds) + " reads";
  }

  private static String rate(Map<String, EngineReads.Rate> rates, String path, boolean max) {
    EngineReads.Rate r = rates.get(path);
    return Fmt.num(max ? r.max() : r.mean(), 3);
  }

  private static String measured(long ms, FleetRun r) {
    return ms >= 0 ? ms + " ms" : failed(r);
  }

  private static String failed(FleetRun r) {
    return r.failure == null ? "—" : "failed: " + r.failure;
  }

  private static String ms(long ms) {
    return ms < 0 ? "—" : String.valueOf(ms);
  }

  private static String pct(double cores) {
    return Double.isNaN(cores) ? "—" : Fmt.percent(cores, 2);
  }
}
