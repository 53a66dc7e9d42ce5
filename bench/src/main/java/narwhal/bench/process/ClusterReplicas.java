package narwhal.bench.process;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.probe.JvmProbe;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * Router replicas clustered through Hazelcast on loopback, each its own process ({@link RouterProcess}) exactly as an
 * operator starts one, with its own HTTP port and journal. They share one fleet definition, a cluster name of their
 * own (no other cluster on the machine is joined) and a free Hazelcast port to count up from. A replica can be
 * SIGKILLed and started again under its name; {@link #close} stops every process this started.
 */
public final class ClusterReplicas implements AutoCloseable {
  /** How long a replica gets to leave the cluster and exit after SIGTERM. */
  public static final long LEAVE_WAIT_S = 15;
  private final BenchEnv env;
  private final JsonObject fleet;
  private final LoadGenerator load;
  private final List<String> names;
  private final RouterProcess[] replicas;
  private final HttpWork[] clients;
  private final List<RouterProcess> started = new ArrayList<>();
  /** Each replica's HTTP port, kept across restarts (a load balancer knows them); null: any free port each start. */
  private final int[] ports;
  /** Each replica's {@code server.health_port}, kept across restarts; null: none (checks go to the client port). */
  private final int[] healthPorts;

  private ClusterReplicas(BenchEnv env, JsonObject fleet, LoadGenerator load, List<String> names, int[] ports, int[] healthPorts) {
    this.env = env;
    this.fleet = fleet;
    this.load = load;
    this.names = List.copyOf(names);
    this.ports = ports;
    this.healthPorts = healthPorts;
    this.replicas = new RouterProcess[names.size()];
    this.clients = new HttpWork[names.size()];
  }

  /**
   * Starts one replica per name, one after the other, in front of {@code engines}, with {@code tune} applied to the
   * fleet file, and waits until every one of them counts all of them as cluster members.
   */
  public static ClusterReplicas start(BenchEnv env, EngineFleet engines, LoadGenerator load, UnaryOperator<JsonObject> tune,
                               List<String> names) {
    return start(env, engines, load, tune, names, false, RouterProcess.Options.plain());
  }

  /**
   * As above; with {@code fixedPorts} each replica keeps one HTTP port across restarts ({@link #port}); every replica
   * starts with {@code options}.
   */
  public static ClusterReplicas start(BenchEnv env, EngineFleet engines, LoadGenerator load, UnaryOperator<JsonObject> tune,
                               List<String> names, boolean fixedPorts, RouterProcess.Options options) {
    ClusterReplicas cluster = prepare(env, engines, load, tune, names, fixedPorts, false);
    for (int i = 0; i < names.size(); i++) cluster.start(i, options);
    cluster.awaitMembers(names.size(), 120_000);
    return cluster;
  }

  /**
   * The replicas of one cluster, none started yet ({@link #start(int, RouterProcess.Options)} starts each): with
   * {@code fixedPorts} each keeps one HTTP port across restarts, with {@code healthPorts} one
   * {@code server.health_port} too ({@link #healthPort}).
   */
  public static ClusterReplicas prepare(BenchEnv env, EngineFleet engines, LoadGenerator load, UnaryOperator<JsonObject> tune,
                                        List<String> names, boolean fixedPorts, boolean healthPorts) {
    JsonObject fleet = tune.apply(engines.fleetFile(env.tmp().resolve("unused.jsonl"), 0));
    fleet.put("cluster", newCluster());
    int clusterPort = fleet.getJsonObject("cluster").getInteger("port");
    java.util.Set<Integer> taken = new java.util.HashSet<>();
    int[] ports = fixedPorts ? names.stream().mapToInt(n -> keptPort(clusterPort, taken)).toArray() : null;
    int[] health = healthPorts ? names.stream().mapToInt(n -> keptPort(clusterPort, taken)).toArray() : null;
    return env.own(new ClusterReplicas(env, fleet, load, names, ports, health));
  }

  /**
   * A port a replica keeps across its restarts: below the ephemeral range, outside the cluster's run of join ports and
   * none of the others {@code taken} here. One
   * from the ephemeral range was taken while its replica was down (an outgoing connection's local port: a chaos smoke's
   * replica could not listen on its {@code server.health_port}, 2026-12-06).
   */
  private static int keptPort(int clusterPort, java.util.Set<Integer> taken) {
    while (true) {
      int port = FreePort.runBelowEphemeral(1);
      if ((port < clusterPort || port >= clusterPort + JOIN_PORTS) && taken.add(port)) return port;
    }
  }

  /** The ports a member without a port in {@code cluster.members} is looked for on: {@code cluster.port} and the 9 after. */
  static final int JOIN_PORTS = 10;

  /**
   * The {@code cluster} section of a new cluster: enabled, a name of its own, loopback, counting up from a port whose
   * run of {@link #JOIN_PORTS} is free and below the ephemeral range (a port-0 listener there — an engine, another
   * process's server — answered the join and ended a replica's start after {@code cluster.join_timeout_s}).
   */
  public static JsonObject newCluster() {
    return new JsonObject().put("enabled", true).put("name", "bench-" + UUID.randomUUID().toString().substring(0, 8))
        .put("members", new JsonArray().add("127.0.0.1")).put("port", FreePort.runBelowEphemeral(JOIN_PORTS)).put("host", "127.0.0.1");
  }

  public int size() {
    return names.size();
  }

  public String name(int i) {
    return names.get(i);
  }

  /** The replicas running now (the last start of each), in their order. */
  public java.util.List<RouterProcess> replicas() {
    return java.util.Arrays.stream(replicas).filter(java.util.Objects::nonNull).toList();
  }

  public RouterProcess replica(int i) {
    return replicas[i];
  }

  /** An HTTP client for replica {@code i} (on the load generator). */
  public HttpWork client(int i) {
    return clients[i];
  }

  public List<HttpWork> clients() {
    return List.of(clients);
  }

  /** Starts (or starts again) replica {@code i}; returns when it serves. */
  public RouterProcess start(int i) {
    return start(i, RouterProcess.Options.plain());
  }

  /** As {@link #start(int)}, with these process options. */
  public RouterProcess start(int i, RouterProcess.Options options) {
    JsonObject own = fleet.copy();
    own.getJsonObject("journal").put("path", env.tmp().resolve(names.get(i) + "-journal.jsonl").toAbsolutePath().toString());
    if (ports != null) own.getJsonObject("server").put("port", ports[i]);
    if (healthPorts != null) own.getJsonObject("server").put("health_port", healthPorts[i]);
    String name = replicas[i] == null ? names.get(i) : names.get(i) + "-restart" + started.size();
    RouterProcess router = RouterProcess.start(env, name, own, options);
    started.add(router);
    replicas[i] = router;
    clients[i] = new HttpWork(load.vertx(), load.client(256), "127.0.0.1", router.port());
    return router;
  }

  /** Replica {@code i}'s fixed HTTP port (started with fixed ports). */
  public int port(int i) {
    return ports[i];
  }

  /** Replica {@code i}'s fixed {@code server.health_port} (prepared with health ports), else 0. */
  public int healthPort(int i) {
    return healthPorts == null ? 0 : healthPorts[i];
  }

  /** Sends SIGTERM to replica {@code i} and returns at once ({@link RouterProcess#awaitExit}). */
  public void terminate(int i) {
    replicas[i].terminate();
  }

  /** SIGKILLs replica {@code i}. */
  public void kill(int i) {
    replicas[i].kill();
  }

  /** Waits until every live replica lists {@code expected} cluster members in its state. */
  public void awaitMembers(int expected, long timeoutMs) {
    for (int i = 0; i < replicas.length; i++) {
      if (replicas[i] != null && replicas[i].alive()) await(i, state -> members(state) == expected, timeoutMs, expected + " cluster members");
    }
  }

  /** Polls replica {@code i}'s state until {@code condition} holds on it; fails naming {@code what} after {@code timeoutMs}. */
  public void await(int i, Predicate<JsonObject> condition, long timeoutMs, String what) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    JsonObject state;
    while (!condition.test(state = state(i))) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(names.get(i) + " does not show " + what + " within " + timeoutMs + " ms: " + state
            + " (log: " + replicas[i].log() + ")");
      }
      JvmProbe.sleep(20);
    }
  }

  /** The cluster members a state lists; -1 for no state (the replica did not answer). */
  public static int members(JsonObject state) {
    return state == null ? -1 : state.getJsonArray("cluster_members", new JsonArray()).size();
  }

  /** Replica {@code i}'s {@code /narwhal/state}; null when it does not answer. */
  public JsonObject state(int i) {
    try {
      HttpWork.Reply reply = clients[i].getBlocking("/narwhal/state", 2_000);
      return reply.status() == 200 ? reply.body().toJsonObject() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** An engine's placement state in a {@code /narwhal/state} answer ("serving", "ejected", …); null when not listed. */
  public static String engineState(JsonObject state, String iid) {
    if (state == null) return null;
    for (Object o : state.getJsonArray("engines", new JsonArray())) {
      JsonObject engine = (JsonObject) o;
      if (iid.equals(engine.getString("iid"))) return engine.getString("state");
    }
    return null;
  }

  @Override
  public void close() {
    for (RouterProcess router : started) router.close(LEAVE_WAIT_S);
  }
}
