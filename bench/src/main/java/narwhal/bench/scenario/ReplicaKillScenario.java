package narwhal.bench.scenario;

import io.vertx.core.Context;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.probe.StateWatch;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.sim.SimEngine;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * R3. Three clustered replicas (each its own process) serve streaming load with cluster state in place — P1
 * quarantined after a prefill failed through replica A, D0 ejected by the liveness sweep after it stopped listening —
 * and A is killed with SIGKILL under load. Checked: B and C keep serving (their clients' outcomes before and after the kill), neither ever loses
 * the quarantine or the ejection, a replica restarted in A's place gets the current state before it serves, and the
 * readmission probes still run once D0 listens again (A may have owned a probe or its lock when it died).
 */
public final class ReplicaKillScenario implements Scenario {
  static final List<String> REPLICAS = List.of("A", "B", "C");
  static final int CLIENTS_PER_REPLICA = 8;
  static final int TOKENS = 16;
  static final double ITL_MS = 5;

  @Override
  public String name() {
    return "replica-kill";
  }

  @Override
  public String summary() {
    return "R3: three replicas under load, SIGKILL one: the others keep serving, no state lost, a restarted one catches up";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    double beforeS = smoke ? 2 : 10;
    double afterS = smoke ? 4 : 20;
    BenchReport report = env.report();
    Progress progress = env.progress();
    SimBench fleet = env.own(SimBench.start(SimBench.twoPairs(engine -> engine.setItlMs(ITL_MS))));
    LoadGenerator load = env.own(new LoadGenerator());
    progress.say("starting 3 clustered replicas");
    ClusterReplicas cluster = ClusterReplicas.start(env, fleet, load, ReplicaKillScenario::tune, REPLICAS);
    report.layout("bench process: simulated P0 P1 (prefill) and D0 D1 (decode), " + TOKENS + " tokens " + ITL_MS + " ms apart; "
            + CLIENTS_PER_REPLICA + " streaming clients per replica, back to back")
        .layout("router: 3 replicas A B C, each its own JVM (java -jar narwhal.jar serve, cluster.enabled), Hazelcast on 127.0.0.1")
        .layout("state: P1 quarantined (one failed prefill through A, failure_quarantine_s 600), D0 ejected (stops listening: liveness, 2 misses)")
        .layout("A is killed with SIGKILL under load, later started again (--preflight=warn: D0 is down); D0 then listens again and must be readmitted everywhere")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("before_s", beforeS).parameter("after_s", afterS).parameter("clients_per_replica", CLIENTS_PER_REPLICA);

    progress.say("making state through A: quarantine P1, eject D0");
    SimEngine p1 = fleet.engine("P1");
    SimEngine d0 = fleet.engine("D0");
    p1.faults().add(new JsonObject().put("kind", "status").put("phase", "prefill").put("count", 1).put("status", 500));
    trip(cluster, 0, s -> "quarantined".equals(ClusterReplicas.engineState(s, "P1")));
    LoadGenerator.join(d0.stopListening(), 10);
    Predicate<JsonObject> made = ReplicaKillScenario::stateMade;
    for (int r = 0; r < REPLICAS.size(); r++) cluster.await(r, made, 20_000, "P1 quarantined and D0 ejected");

    Traffic traffic = new Traffic(load, cluster);
    traffic.start();
    StateWatch survivors = env.own(new StateWatch(load.vertx(), List.of(cluster.client(1), cluster.client(2))).start());
    StateWatch.Wait lost = survivors.when(made.negate());
    progress.say("load on A B C for " + beforeS + " s");
    JvmProbe.sleep((long) (beforeS * 1000));

    progress.say("SIGKILL A (pid " + cluster.replica(0).pid() + ")");
    StateWatch.Wait twoMembers = survivors.when(s -> ClusterReplicas.members(s) == 2);
    traffic.phase("after kill");
    long killed = System.nanoTime();
    cluster.kill(0);
    JvmProbe.sleep((long) (afterS * 1000));
    List<StateWatch.Sighting> membersSeen = twoMembers.sofar();

    progress.say("starting A again");
    traffic.phase("after restart");
    // strict preflight refuses to start while D0 is down: an operator restarts with --preflight=warn
    RouterProcess restarted = cluster.start(0, RouterProcess.Options.serving("--preflight=warn"));
    JsonObject firstState = cluster.state(0);
    boolean caughtUp = stateMade(firstState);
    cluster.awaitMembers(3, 120_000);
    traffic.resume(0);
    JvmProbe.sleep((long) (beforeS * 1000));
    List<StateWatch.Sighting> lostSeen = lost.sofar();

    progress.say("D0 listens again: readmission on every replica");
    traffic.phase("after readmission");
    StateWatch all = env.own(new StateWatch(load.vertx(), cluster.clients()).start());
    StateWatch.Wait readmitted = all.when(s -> "serving".equals(ClusterReplicas.engineState(s, "D0")));
    long resumed = System.nanoTime();
    LoadGenerator.join(d0.resumeListening(), 10);
    List<StateWatch.Sighting> back;
    String readmission;
    try {
      back = readmitted.await(30_000);
      readmission = Fmt.num((back.stream().mapToLong(StateWatch.Sighting::estimate).max().orElse(resumed) - resumed) / 1e6, 0) + " ms";
    } catch (IllegalStateException e) {
      back = null;
      readmission = "not within 30 s";
    }
    JvmProbe.sleep((long) (beforeS * 1000));
    traffic.stop();

    ResultTable outcomes = new ResultTable("what each replica's clients saw, by phase (requests that ended in the phase)",
        "phase", "replica", "requests", "ok", "errors", "outcomes");
    traffic.table(outcomes);
    report.table(outcomes);
    double membersMs = membersSeen.stream().filter(s -> s != null).mapToLong(StateWatch.Sighting::estimate).max().orElse(-1);
    ResultTable states = new ResultTable("cluster state around the kill", "check", "result");
    states.row("B and C count 2 members after the kill", membersMs < 0 ? "not within " + afterS + " s"
        : Fmt.num((membersMs - killed) / 1e6, 0) + " ms after SIGKILL");
    states.row("B or C ever showed P1 not quarantined or D0 not ejected", describe(lostSeen));
    states.row("restarted A: ready after", restarted.readyMs() + " ms");
    states.row("restarted A: first state", "P1 " + ClusterReplicas.engineState(firstState, "P1") + ", D0 "
        + ClusterReplicas.engineState(firstState, "D0"));
    states.row("D0 serving again on every replica after it listens", readmission);
    report.table(states);

    long survivorErrors = traffic.errors("after kill", 1) + traffic.errors("after kill", 2);
    long survivorOk = traffic.ok("after kill", 1) + traffic.ok("after kill", 2);
    report.verdict(Verdict.check("R3", "B and C keep serving after A is killed (errors / ok, " + afterS + " s)",
        survivorErrors + " / " + survivorOk, "0 errors, ok > 0", survivorErrors == 0 && survivorOk > 0));
    boolean kept = lostSeen.stream().allMatch(s -> s == null);
    report.verdict(Verdict.check("R3", "no ejection or quarantine lost with A", kept ? "kept on B and C" : "lost: " + describe(lostSeen),
        "kept", kept));
    report.verdict(Verdict.check("R3", "a restarted replica gets the current state", caughtUp ? "P1 quarantined, D0 ejected at first answer"
        : "first state: " + firstState, "current state", caughtUp));
    report.verdict(Verdict.check("R3", "readmission still runs after the kill", readmission, "D0 back on every replica", back != null));
    report.verdict(Verdict.info("R3", "A's own clients when it was killed (cut mid-stream or refused)",
        traffic.errors("after kill", 0) + " errors"));
    report.raw("outcomes", traffic.toJson());
  }


  /** Quarantine long enough to outlast the run; breaker, liveness and readmission quick. */
  static JsonObject tune(JsonObject fleet) {
    PropagationScenario.tune(fleet);
    SimBench.set(fleet, "recovery", "failure_quarantine_s", 600);
    SimBench.set(fleet, "recovery", "liveness_every", 5);
    SimBench.set(fleet, "recovery", "liveness_misses", 2);
    return fleet;
  }

  private static boolean stateMade(JsonObject state) {
    return "quarantined".equals(ClusterReplicas.engineState(state, "P1")) && "ejected".equals(ClusterReplicas.engineState(state, "D0"));
  }

  private static String describe(List<StateWatch.Sighting> seen) {
    List<String> on = new ArrayList<>();
    for (int i = 0; i < seen.size(); i++) if (seen.get(i) != null) on.add(REPLICAS.get(i + 1));
    return on.isEmpty() ? "never" : "yes, on " + on;
  }

  /** Sends requests through replica {@code r} until its state satisfies {@code reached}. */
  private static void trip(ClusterReplicas cluster, int r, Predicate<JsonObject> reached) {
    Buffer body = Bodies.completion(2, false).toBuffer();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!reached.test(cluster.state(r))) {
      if (System.nanoTime() > deadline) throw new IllegalStateException("replica " + REPLICAS.get(r) + " never reached the state: "
          + cluster.state(r));
      cluster.client(r).postBlocking("/v1/completions", body, false, 5_000);
    }
  }

  /**
   * Streaming clients bound to one replica each, back to back; every outcome is counted under the phase current when
   * its request ended. A replica's clients pause while it is dead ({@link #phase} after a kill stops A's).
   */
  static final class Traffic {
    private final LoadGenerator load;
    private final ClusterReplicas cluster;
    private final Buffer body = Bodies.completion(TOKENS, true).toBuffer();
    private final Map<String, Map<Integer, Map<String, Integer>>> counts = new ConcurrentHashMap<>();
    private final boolean[] paused = new boolean[REPLICAS.size()];
    private final CountDownLatch stopped = new CountDownLatch(REPLICAS.size() * CLIENTS_PER_REPLICA);
    private volatile String phase = "before kill";
    private volatile boolean stop;

    Traffic(LoadGenerator load, ClusterReplicas cluster) {
      this.load = load;
      this.cluster = cluster;
    }

    void start() {
      for (int r = 0; r < REPLICAS.size(); r++) {
        for (int c = 0; c < CLIENTS_PER_REPLICA; c++) {
          Context ctx = load.vertx().getOrCreateContext();
          int replica = r;
          ctx.runOnContext(v -> next(replica));
        }
      }
    }

    /** Counts from now on under {@code name}; the phase "after kill" pauses A's clients until {@link #resume}. */
    synchronized void phase(String name) {
      if (name.equals("after kill")) paused[0] = true;
      phase = name;
    }

    synchronized void resume(int replica) {
      paused[replica] = false;
    }

    private synchronized boolean paused(int replica) {
      return paused[replica];
    }

    private void next(int replica) {
      if (stop) {
        stopped.countDown();
        return;
      }
      if (paused(replica)) {
        load.vertx().setTimer(50, t -> next(replica));
        return;
      }
      HttpWork client = cluster.client(replica);
      client.post("/v1/completions", body, true, 30_000).onComplete(ar -> {
        Exchange e = ar.result();
        String kind = e.ok() ? "ok" : e.outcome().name().toLowerCase() + (e.status() > 0 && e.status() != 200 ? " " + e.status() : "");
        counts.computeIfAbsent(phase, k -> new ConcurrentHashMap<>()).computeIfAbsent(replica, k -> new ConcurrentHashMap<>())
            .merge(kind, 1, Integer::sum);
        next(replica);
      });
    }

    void stop() {
      stop = true;
      try {
        stopped.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    long ok(String phase, int replica) {
      return of(phase, replica).getOrDefault("ok", 0);
    }

    long errors(String phase, int replica) {
      return of(phase, replica).entrySet().stream().filter(e -> !e.getKey().equals("ok")).mapToLong(Map.Entry::getValue).sum();
    }

    private Map<String, Integer> of(String phase, int replica) {
      return counts.getOrDefault(phase, Map.of()).getOrDefault(replica, Map.of());
    }

    void table(ResultTable table) {
      for (String p : List.of("before kill", "after kill", "after restart", "after readmission")) {
        for (int r = 0; r < REPLICAS.size(); r++) {
          Map<String, Integer> m = new TreeMap<>(of(p, r));
          if (m.isEmpty()) continue;
          long total = m.values().stream().mapToLong(Integer::longValue).sum();
          table.row(p, REPLICAS.get(r), total, ok(p, r), errors(p, r), m.toString());
        }
      }
    }

    JsonObject toJson() {
      JsonObject json = new JsonObject();
      counts.forEach((p, byReplica) -> {
        JsonObject o = new JsonObject();
        byReplica.forEach((r, m) -> o.put(REPLICAS.get(r), new JsonObject(new TreeMap<>(m))));
        json.put(p, o);
      });
      return json;
    }
  }
}
