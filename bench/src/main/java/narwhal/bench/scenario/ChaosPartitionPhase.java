package narwhal.bench.scenario;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PhasedLoad;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.ClusterReplicas;
import narwhal.bench.process.PartitionNetwork;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.sim.SimEngineOptions;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * R9, a network partition. Two clustered replicas A and B, each its own JVM in a network namespace of its own
 * ({@link PartitionNetwork}, as {@code PartitionTest} uses): the engines and the load generator reach both, the cluster
 * link between them is cut by nftables rules. Under load through both replicas the link is cut until each side is a
 * cluster of its own (Hazelcast's 15 s heartbeat limit), then an operator ejects one engine on each side
 * ({@code narwhal admin eject}, run in that side's namespace: D1 on A, D2 on B), then the partition heals. Measured:
 * requests that failed anywhere (lost; target 0) and the time from the heal until both replicas show both ejections
 * and one cluster again (target ≤ 10 s). Needs root, {@code ip} and {@code nft}; without them the phase says so and
 * measures nothing.
 */
final class ChaosPartitionPhase implements ChaosScenario.Phase {
  static final String BEFORE = "before";
  static final String PARTITIONED = "partitioned";
  static final String HEALED = "healed";
  /** The convergence bound after the heal (QUALITY R9). */
  static final long CONVERGE_MS = 10_000;
  private static final String TOKEN = "bench-partition-" + UUID.randomUUID();
  private static final int CLUSTER_PORT = 5701;

  @Override
  public String name() {
    return "partition";
  }

  @Override
  public void run(BenchEnv env, ChaosScenario.Scope scope) throws Exception {
    boolean smoke = env.smoke();
    int clients = smoke ? 4 : 8;
    double stepS = smoke ? 2 : 10;
    BenchReport report = env.report();
    PartitionNetwork net;
    try {
      net = scope.own(PartitionNetwork.create());
    } catch (PartitionNetwork.Unavailable e) {
      env.progress().say("partition: skipped: " + e.getMessage());
      report.note("partition (R9) skipped: " + e.getMessage());
      report.verdict(Verdict.info("R9", "network partition between replicas", "not measured: " + e.getMessage()));
      return;
    }
    List<SimEngineOptions> engines = new ArrayList<>();
    for (String spec : List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode", "D2:decode", "D3:decode")) {
      String[] parts = spec.split(":");
      engines.add(SimBench.engine(parts[0], parts[1]).setHost(net.engineHost()).setItlMs(5));
    }
    SimBench fleet = scope.own(SimBench.start(engines));
    LoadGenerator load = scope.own(new LoadGenerator());
    JsonObject base = SimBench.unbalanced(fleet.fleetFile(env.tmp().resolve("unused.jsonl"), 0));
    base.getJsonObject("server").put("host", "0.0.0.0");
    // no readmission while the phase runs: an admin ejection otherwise ends by readmission after
    // monitor_interval_s × readmit_every (10 s by default), and the heal would find nothing to merge
    SimBench.set(base, "recovery", "readmit_every", 100_000);
    base.put("cluster", new JsonObject().put("enabled", true).put("name", "bench-partition-" + UUID.randomUUID().toString().substring(0, 8))
        .put("port", CLUSTER_PORT).put("members", new JsonArray().add(net.a.clusterHost() + ":" + CLUSTER_PORT).add(net.b.clusterHost() + ":" + CLUSTER_PORT)));
    env.progress().say("partition: starting replicas A and B, each in its own network namespace");
    RouterProcess a = replica(env, "partition-A", base, net.a);
    scope.own((AutoCloseable) () -> a.close(ClusterReplicas.LEAVE_WAIT_S));
    RouterProcess b = replica(env, "partition-B", base, net.b);
    scope.own((AutoCloseable) () -> b.close(ClusterReplicas.LEAVE_WAIT_S));
    HttpWork clientA = new HttpWork(load.vertx(), load.client(256), net.a.host(), a.port());
    HttpWork clientB = new HttpWork(load.vertx(), load.client(256), net.b.host(), b.port());
    await("A and B in one cluster", 120_000, () -> membersSeen(clientA) == 2 && membersSeen(clientB) == 2, clientA, clientB);
    report.layout("partition (R9): 2 clustered replicas A and B, each its own JVM in a network namespace of its own (veth links; the engines "
        + "and the load generator reach both; readmission off, so an ejection stays until the merge); " + clients + " streaming clients (16 tokens, 5 ms apart) of A and of B, back to back; "
        + stepS + " s, then nftables rules cut the cluster link until each side is a cluster of its own (Hazelcast's heartbeat limit: 15 s), "
        + "`narwhal admin eject` on each side (D1 on A, D2 on B), the heal, " + stepS + " s more once they converge");

    PhasedLoad la = load(clientA, clients);
    PhasedLoad lb = load(clientB, clients);
    la.start();
    lb.start();
    JvmProbe.sleep((long) (stepS * 500));
    phase(la, lb, BEFORE);
    JvmProbe.sleep((long) (stepS * 1000));

    env.progress().say("partition: cutting the cluster link between A and B");
    phase(la, lb, PARTITIONED);
    long cut = System.nanoTime();
    net.partition();
    await("each side alone in a cluster of its own", 90_000, () -> membersSeen(clientA) == 1 && membersSeen(clientB) == 1, clientA, clientB);
    double splitS = (System.nanoTime() - cut) / 1e9;
    env.progress().say("partition: split after " + Fmt.num(splitS, 1) + " s; eject D1 on A and D2 on B");
    CompletableFuture<String> ejectA = CompletableFuture.supplyAsync(() -> admin(env, a, net.a, "eject", "D1"));
    CompletableFuture<String> ejectB = CompletableFuture.supplyAsync(() -> admin(env, b, net.b, "eject", "D2"));
    String adminA = ejectA.get(200, TimeUnit.SECONDS);
    String adminB = ejectB.get(200, TimeUnit.SECONDS);
    // the admin commands' lite members gone (their JVMs exited) before the heal
    await("the admin commands' members gone", 60_000, () -> nodes(clientA) == 1 && nodes(clientB) == 1, clientA, clientB);
    Map<String, String> sideA = states(clientA);
    Map<String, String> sideB = states(clientB);
    boolean apart = "ejected".equals(sideA.get("D1")) && "serving".equals(sideA.get("D2"))
        && "ejected".equals(sideB.get("D2")) && "serving".equals(sideB.get("D1"));

    env.progress().say("partition: healing");
    phase(la, lb, HEALED);
    net.heal();
    long healed = System.nanoTime();
    BooleanSupplier converged = () -> {
      Map<String, String> sa = states(clientA);
      Map<String, String> sb = states(clientB);
      return !sa.isEmpty() && sa.equals(sb) && "ejected".equals(sa.get("D1")) && "ejected".equals(sa.get("D2"))
          && "serving".equals(sa.get("D0")) && "serving".equals(sa.get("D3"));
    };
    BooleanSupplier oneCluster = () -> membersSeen(clientA) == 2 && membersSeen(clientB) == 2;
    Double decisionsS = null;
    Double clusterS = null;
    long deadline = healed + TimeUnit.SECONDS.toNanos(60);
    while ((decisionsS == null || clusterS == null) && System.nanoTime() < deadline) {
      if (decisionsS == null && converged.getAsBoolean()) decisionsS = (System.nanoTime() - healed) / 1e9;
      if (clusterS == null && oneCluster.getAsBoolean()) clusterS = (System.nanoTime() - healed) / 1e9;
      JvmProbe.sleep(50);
    }
    Map<String, String> endA = states(clientA);
    Map<String, String> endB = states(clientB);
    JvmProbe.sleep((long) (stepS * 1000));
    la.stop();
    lb.stop();

    ResultTable table = new ResultTable("partition (R9): what A's and B's clients saw, by phase; latency ms", "phase", "replica",
        "requests", "failed", "p50", "p99", "max");
    long requests = 0;
    long failed = 0;
    LatencyHistogram all = new LatencyHistogram();
    for (PhasedLoad l : List.of(la, lb)) {
      for (var e : l.phases().entrySet()) {
        PhasedLoad.Tally t = e.getValue().get("stream");
        LatencyHistogram h = t.stats.latency();
        table.row(e.getKey(), l == la ? "A" : "B", t.stats.completed(), t.failed(), Fmt.pct(h, 50), Fmt.pct(h, 99), Fmt.ms(h.max()));
        requests += t.stats.completed();
        failed += t.failed();
        all.merge(h);
      }
    }
    report.table(table);
    ResultTable decisions = new ResultTable("partition (R9): engine states, " + "A / B", "when", "A", "B");
    decisions.row("partitioned, after the ejections", sideA.toString(), sideB.toString());
    decisions.row("after the heal", endA.toString(), endB.toString());
    report.table(decisions);
    report.verdict(Verdict.check("R9", "requests lost (failed) through A and B, partition and heal included", failed + " of " + requests, "0",
        failed == 0 && requests > 0));
    report.verdict(Verdict.check("R9", "each side decided alone while partitioned (A: D1 ejected, D2 serving; B: the reverse)",
        "A " + sideA + ", B " + sideB + (adminA == null ? "" : "; admin on A: " + adminA) + (adminB == null ? "" : "; admin on B: " + adminB),
        "both ejections, each on its side only", apart && adminA == null && adminB == null));
    report.verdict(Verdict.perf("R9", "after the heal: both replicas show both ejections (D1, D2 ejected; D0, D3 serving)",
        decisionsS == null ? "not within 60 s" : Fmt.num(decisionsS, 2) + " s", "≤ " + CONVERGE_MS / 1000 + " s",
        decisionsS != null && decisionsS * 1000 <= CONVERGE_MS));
    report.verdict(Verdict.perf("R9", "after the heal: one cluster again (members_seen 2 on both)",
        clusterS == null ? "not within 60 s" : Fmt.num(clusterS, 2) + " s", "≤ " + CONVERGE_MS / 1000 + " s",
        clusterS != null && clusterS * 1000 <= CONVERGE_MS));
    report.verdict(Verdict.info("R9", "the cut until each side was a cluster of its own", Fmt.num(splitS, 1) + " s"));
    report.raw("partition", new JsonObject().put("latency", all.toJson()).put("split_s", splitS)
        .put("converged_s", decisionsS).put("one_cluster_s", clusterS).put("requests", requests).put("failed", failed));
  }

  private static RouterProcess replica(BenchEnv env, String name, JsonObject base, PartitionNetwork.Side side) {
    JsonObject own = base.copy();
    own.getJsonObject("cluster").put("host", side.clusterHost());
    own.getJsonObject("journal").put("path", env.tmp().resolve(name + "-journal.jsonl").toAbsolutePath().toString());
    return RouterProcess.start(env, name, own, RouterProcess.Options.serving("--preflight=warn")
        .under(side.exec(), Map.of("NARWHAL_ADMIN_TOKEN", TOKEN)));
  }

  /** {@code narwhal admin ARGS} as an operator on that side runs it: its own JVM in the side's namespace; null when it succeeded, else its output. */
  private static String admin(BenchEnv env, RouterProcess replica, PartitionNetwork.Side side, String... args) {
    List<String> command = new ArrayList<>(side.exec());
    command.addAll(List.of(env.java().toString(), "-Xmx128m", "-jar", env.routerJar().toString(), "admin"));
    command.addAll(List.of(args));
    command.addAll(List.of("--fleet", replica.fleetFile().toString(), "--timeout", "60"));
    try {
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
      builder.environment().put("NARWHAL_ADMIN_TOKEN", TOKEN);
      Process p = builder.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(150, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return "did not end: " + out;
      }
      return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + out;
    } catch (java.io.IOException e) {
      return e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /** Seconds from {@code since} until {@code condition} holds (polled every 50 ms); null when not within {@code boundMs}. */
  private static Double within(BooleanSupplier condition, long boundMs, long since) {
    long deadline = since + TimeUnit.MILLISECONDS.toNanos(boundMs);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) return null;
      JvmProbe.sleep(50);
    }
    return (System.nanoTime() - since) / 1e9;
  }

  private static void await(String what, long boundMs, BooleanSupplier condition, HttpWork a, HttpWork b) {
    if (within(condition, boundMs, System.nanoTime()) == null) {
      throw new IllegalStateException("partition: not within " + boundMs + " ms: " + what + "; A: " + state(a) + "; B: " + state(b));
    }
  }

  private static JsonObject state(HttpWork client) {
    try {
      HttpWork.Reply reply = client.getBlocking("/narwhal/state", 2_000);
      return reply.status() == 200 ? reply.body().toJsonObject() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** The router replicas the side's cluster has ({@code cluster.members_seen}); -1 when it does not answer. */
  private static int membersSeen(HttpWork client) {
    JsonObject state = state(client);
    JsonObject cluster = state == null ? null : state.getJsonObject("cluster");
    return cluster == null ? -1 : cluster.getInteger("members_seen", -1);
  }

  /** The Vert.x nodes of the side's cluster (replicas and admin commands); -1 when it does not answer. */
  private static int nodes(HttpWork client) {
    JsonObject state = state(client);
    return state == null ? -1 : state.getJsonArray("cluster_members", new JsonArray()).size();
  }

  /** iid → state in the replica's {@code /narwhal/state}; empty when it does not answer. */
  private static Map<String, String> states(HttpWork client) {
    JsonObject state = state(client);
    Map<String, String> out = new TreeMap<>();
    if (state == null) return out;
    state.getJsonArray("engines", new JsonArray()).stream().map(JsonObject.class::cast)
        .forEach(e -> out.put(e.getString("iid"), e.getString("state")));
    return out;
  }

  private static PhasedLoad load(HttpWork client, int clients) {
    return new PhasedLoad(client, List.of(new PhasedLoad.Mode("stream", true, Bodies.completion(16, true).toBuffer())),
        clients, 60_000, "warm-up");
  }

  private static void phase(PhasedLoad a, PhasedLoad b, String name) {
    a.phase(name);
    b.phase(name);
  }
}
