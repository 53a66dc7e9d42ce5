package narwhal.bench.scenario;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;
import narwhal.sim.SimEngine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * R13 (issue 41): engines replaced and scaled at Kubernetes' pace under steady streaming load. 2 prefill + 6 decode
 * simulated engines are replaced one by one, first as a rollout whose fleet file follows 5 s late (the new engine up,
 * the old one stopped as vLLM on SIGTERM, then the engine re-pointed to the new address), then with the file first
 * (re-pointed, then the old one stopped 5 s later); then decode is scaled in to 2 and out to 8, one fleet change per
 * added engine, 2 s apart; then all of it again with a second router that discovers its engines from their pods in a
 * Kubernetes API stand-in ({@link PodChurn}). Counts every failed request, and for each change the time from the router
 * applying it to the first client leg on the new engine.
 */
public final class EngineChurnScenario implements Scenario {
  private static final String PATH = "/v1/completions";
  private static final Pattern APPLIED = Pattern.compile("narwhal_config_reloads_total\\{outcome=\"applied\"[^}]*} ([0-9.E]+)");

  @Override
  public String name() {
    return "engine-churn";
  }

  @Override
  public String summary() {
    return "R13 (issues 41, 42): 2 prefill + 6 decode engines replaced one by one both ways, then decode scaled 2 → 8, under "
        + "streaming load; then the same through engine discovery (pods in a Kubernetes API stand-in)";
  }

  /** One fleet change and what followed it. */
  private record Change(String phase, String iid, String what, long appliedMs, long firstLegMs) {
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    long lagMs = smoke ? 1_000 : 5_000;
    long scaleGapMs = smoke ? 500 : 2_000;
    int clients = smoke ? 4 : 12;
    BenchReport report = env.report();
    Progress progress = env.progress();
    Vertx engines = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
    env.own(() -> LoadGenerator.join(engines.close(), 30));
    Map<String, SimEngine> fleet = new LinkedHashMap<>();
    Map<String, String> roles = new LinkedHashMap<>();
    for (String iid : List.of("P0", "P1", "D0", "D1", "D2", "D3", "D4", "D5")) {
      roles.put(iid, iid.startsWith("P") ? "prefill" : "decode");
      fleet.put(iid, start(engines, iid, roles.get(iid)));
    }
    Path journal = env.tmp().resolve("journal.jsonl");
    Files.deleteIfExists(journal);
    progress.say("starting the router replica over 2 prefill + 6 decode simulated engines");
    RouterProcess router = env.own(RouterProcess.start(env, name(), fleetFile(fleet, roles, journal),
        RouterProcess.Options.plain()));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpWork via = new HttpWork(load.vertx(), load.client(64), "127.0.0.1", router.port());
    report.layout("bench process: " + clients + " streaming clients (Vert.x) + the simulated engines (20 ms per token, "
            + "16 tokens a request), each generation started in this JVM; a stop is the simulator's vLLM SIGTERM (SimEngine.shutDown)")
        .layout("router: one replica, its own JVM, pid " + router.pid() + ", defaults; the bench rewrites its fleet file")
        .layout("all on one 2-core machine");
    report.parameter("clients", clients).parameter("fleet_lag_ms", lagMs).parameter("scale_gap_ms", scaleGapMs);

    RunStats stats = new RunStats("churn").window(System.nanoTime(), Long.MAX_VALUE);
    AtomicBoolean stop = new AtomicBoolean();
    List<Future<Void>> loops = clients(via, clients, stats, stop);
    JvmProbe.sleep(smoke ? 1_000 : 5_000);

    List<Change> changes = new ArrayList<>();
    List<String> order = smoke ? List.of("P0", "D0") : List.copyOf(fleet.keySet());
    int generation = 1;
    progress.say("rollout, file late: new up, old SIGTERMed, fleet re-pointed " + lagMs + " ms later");
    for (String iid : order) {
      SimEngine old = fleet.get(iid);
      SimEngine fresh = start(engines, iid + "-g" + generation, roles.get(iid));
      Future<Void> stopped = old.shutDown(60_000);
      JvmProbe.sleep(lagMs);
      fleet.put(iid, fresh);
      changes.add(change(router, via, fleet, roles, journal, "file late", iid, "re-pointed to a new engine", fresh));
      LoadGenerator.join(stopped.eventually(old::close), 90);
    }
    generation++;
    progress.say("rollout, file first: re-pointed, old SIGTERMed " + lagMs + " ms later");
    for (String iid : order) {
      SimEngine old = fleet.get(iid);
      SimEngine fresh = start(engines, iid + "-g" + generation, roles.get(iid));
      fleet.put(iid, fresh);
      changes.add(change(router, via, fleet, roles, journal, "file first", iid, "re-pointed to a new engine", fresh));
      JvmProbe.sleep(lagMs);
      LoadGenerator.join(old.shutDown(60_000).eventually(old::close), 90);
    }
    progress.say("decode scaled in to 2, then out to 8, one change per engine, " + scaleGapMs + " ms apart");
    List<String> scaledIn = fleet.keySet().stream().filter(i -> i.startsWith("D")).skip(2).toList();
    List<SimEngine> leaving = new ArrayList<>();
    scaledIn.forEach(iid -> {
      leaving.add(fleet.remove(iid));
      roles.remove(iid);
    });
    writeFleet(router, fleet, roles, journal);
    JvmProbe.sleep(scaleGapMs);
    leaving.forEach(e -> LoadGenerator.join(e.shutDown(60_000).eventually(e::close), 90));
    for (int n = 0; n < (smoke ? 2 : 6); n++) {
      String iid = "D" + (6 + n);
      roles.put(iid, "decode");
      SimEngine added = start(engines, iid, "decode");
      fleet.put(iid, added);
      changes.add(change(router, via, fleet, roles, journal, "scale out", iid, "added", added));
      JvmProbe.sleep(scaleGapMs);
    }
    JvmProbe.sleep(smoke ? 500 : 2_000);
    stop.set(true);
    LoadGenerator.join(Future.all(loops), 60);
    router.close();

    progress.say("the same churn through engine discovery: the engines' pods in a Kubernetes API stand-in, no fleet file change");
    RunStats podStats = new RunStats("churn-discovery").window(System.nanoTime(), Long.MAX_VALUE);
    changes.addAll(throughDiscovery(env, engines, smoke, clients, scaleGapMs, podStats));

    ResultTable table = new ResultTable("each fleet change (first client leg on the new engine, after the router applied the change)",
        "phase", "engine", "change", "applied after the change ms", "first client leg after applied ms");
    long worst = 0;
    int never = 0;
    for (Change c : changes) {
      table.row(c.phase(), c.iid(), c.what(), c.appliedMs() < 0 ? "never" : String.valueOf(c.appliedMs()),
          c.firstLegMs() < 0 ? "never" : String.valueOf(c.firstLegMs()));
      if (c.firstLegMs() < 0) never++;
      worst = Math.max(worst, c.firstLegMs());
    }
    report.table(table);
    ResultTable requests = new ResultTable("the clients' streams during the churn", "requests", "ok", "failed", "p50 ms", "p99 ms",
        "max ms");
    requests.row(stats.completed(), stats.ok(), stats.errors(), Fmt.pct(stats.latency(), 50), Fmt.pct(stats.latency(), 99),
        Fmt.ms(stats.latency().max()));
    requests.row(podStats.completed() + " (discovery)", podStats.ok(), podStats.errors(), Fmt.pct(podStats.latency(), 50),
        Fmt.pct(podStats.latency(), 99), Fmt.ms(podStats.latency().max()));
    report.table(requests);
    if (stats.errors() > 0) report.note("failed requests (samples): " + String.join(" | ", stats.errorSamples()));
    if (podStats.errors() > 0) report.note("failed requests through discovery (samples): " + String.join(" | ", podStats.errorSamples()));
    report.verdict(Verdict.check("R13", "no failed request while engines are replaced and scaled (graceful stops)",
        stats.errors() + " of " + stats.completed(), "0", stats.errors() == 0));
    report.verdict(Verdict.check("R13", "no failed request while the engines' pods are replaced and scaled (discovery)",
        podStats.errors() + " of " + podStats.completed(), "0", podStats.errors() == 0));
    report.verdict(Verdict.perf("R13", "each new engine serving after its change reached the router (worst)",
        never > 0 ? never + " never served" : worst + " ms", "≤ 1,000 ms", never == 0 && worst <= 1_000));
  }

  /**
   * The churn again with a router that discovers its engines: each engine's pod rolled as a StatefulSet rolls it
   * (terminating while vLLM drains on SIGTERM, deleted, recreated under its name at a new address once its engine is
   * up), then decode scaled in and out by pods.
   */
  private List<Change> throughDiscovery(BenchEnv env, Vertx engines, boolean smoke, int clients, long scaleGapMs, RunStats stats)
      throws Exception {
    PodChurn pods = env.own(new PodChurn());
    Map<String, SimEngine> fleet = new LinkedHashMap<>();
    List<String> names = smoke ? List.of("prefill-0", "prefill-1", "decode-0", "decode-1")
        : List.of("prefill-0", "prefill-1", "decode-0", "decode-1", "decode-2", "decode-3", "decode-4", "decode-5");
    for (String name : names) {
      SimEngine engine = start(engines, "k-" + name, role(name));
      fleet.put(name, engine);
      pods.ready(name, role(name), engine.port());
    }
    Path journal = env.tmp().resolve("journal-discovery.jsonl");
    Files.deleteIfExists(journal);
    JsonObject file = SimBench.unbalanced(new JsonObject().put("schema", "narwhal.fleet").put("schema_version", 1)
        .put("model", SimBench.MODEL).put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("journal", new JsonObject().put("path", journal.toAbsolutePath().toString())).put("discovery", pods.discovery()));
    RouterProcess router = env.own(RouterProcess.start(env, name() + "-discovery", file, RouterProcess.Options.serving("--preflight=warn")));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpWork via = new HttpWork(load.vertx(), load.client(64), "127.0.0.1", router.port());
    awaitReady(via, names.size(), 60_000);
    AtomicBoolean stop = new AtomicBoolean();
    List<Future<Void>> loops = clients(via, clients, stats, stop);
    JvmProbe.sleep(smoke ? 1_000 : 5_000);

    List<Change> changes = new ArrayList<>();
    for (String name : smoke ? List.of("prefill-0", "decode-0") : names) {
      SimEngine old = fleet.get(name);
      pods.terminating(name);
      LoadGenerator.join(old.shutDown(60_000).eventually(old::close), 90);
      pods.deleted(name);
      SimEngine fresh = start(engines, "k-" + name + "-g1", role(name));
      fleet.put(name, fresh);
      changes.add(measure(via, "discovery: pod rolled", name, "recreated at a new address", fresh,
          () -> pods.ready(name, role(name), fresh.port())));
    }
    List<String> scaledIn = names.stream().filter(n -> n.startsWith("decode")).skip(smoke ? 1 : 2).toList();
    scaledIn.forEach(pods::terminating);
    JvmProbe.sleep(scaleGapMs);
    for (String name : scaledIn) {
      SimEngine leaving = fleet.remove(name);
      LoadGenerator.join(leaving.shutDown(60_000).eventually(leaving::close), 90);
      pods.deleted(name);
    }
    for (int n = 0; n < scaledIn.size(); n++) {
      String name = "decode-" + (names.size() + n);
      SimEngine added = start(engines, "k-" + name, "decode");
      fleet.put(name, added);
      changes.add(measure(via, "discovery: scale out", name, "pod added", added, () -> pods.ready(name, "decode", added.port())));
      JvmProbe.sleep(scaleGapMs);
    }
    JvmProbe.sleep(smoke ? 500 : 2_000);
    stop.set(true);
    LoadGenerator.join(Future.all(loops), 60);
    return changes;
  }

  private static String role(String podName) {
    return podName.startsWith("prefill") ? "prefill" : "decode";
  }

  /** Waits until the router serves {@code engines} engines (all the pods checked), or {@code timeoutMs}. */
  private static void awaitReady(HttpWork via, int engines, long timeoutMs) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    while (System.nanoTime() < deadline) {
      JsonObject state = via.getBlocking("/narwhal/state", 5_000).body().toJsonObject();
      long serving = state.getJsonArray("engines").stream().map(JsonObject.class::cast)
          .filter(e -> "serving".equals(e.getString("state"))).count();
      if (serving == engines) return;
      JvmProbe.sleep(50);
    }
    throw new IllegalStateException("the router never served the " + engines + " discovered engines");
  }

  /** Makes a change ({@code act}), then waits for the router to apply it and for the first client leg on {@code engine}. */
  private static Change measure(HttpWork via, String phase, String iid, String what, SimEngine engine, Runnable act) {
    double before = applied(via);
    long made = System.nanoTime();
    act.run();
    long appliedAt = -1;
    long firstLeg = -1;
    long deadline = made + 20_000_000_000L;
    while (System.nanoTime() < deadline && (appliedAt < 0 || firstLeg < 0)) {
      if (appliedAt < 0 && applied(via) > before) appliedAt = System.nanoTime();
      if (firstLeg < 0 && engine.requests().stream().anyMatch(EngineChurnScenario::clientLeg)) firstLeg = System.nanoTime();
      JvmProbe.sleep(10);
    }
    long appliedMs = appliedAt < 0 ? -1 : (appliedAt - made) / 1_000_000;
    long legMs = firstLeg < 0 || appliedAt < 0 ? -1 : Math.max(0, (firstLeg - appliedAt) / 1_000_000);
    return new Change(phase, iid, what, appliedMs, legMs);
  }

  /** {@code clients} streaming clients, each sending one request after the other until {@code stop}. */
  private static List<Future<Void>> clients(HttpWork via, int clients, RunStats stats, AtomicBoolean stop) {
    AtomicLong sent = new AtomicLong();
    List<Future<Void>> loops = new ArrayList<>();
    via.vertxRun(() -> {
      for (int c = 0; c < clients; c++) loops.add(loop(via, c, sent, stats, stop));
    });
    return loops;
  }

  private static SimEngine start(Vertx vertx, String name, String role) {
    return LoadGenerator.join(SimEngine.start(vertx, SimBench.engine(name, role).setItlMs(20).setRequestLogLimit(200)), 30);
  }

  /** A client's streams one after the other until {@code stop}, each prompt its own (spread over producers). */
  private static Future<Void> loop(HttpWork via, int client, AtomicLong sent, RunStats stats, AtomicBoolean stop) {
    if (stop.get()) return Future.succeededFuture();
    JsonObject body = Bodies.completion(16, true).put("prompt", "client " + client + " request " + sent.incrementAndGet()
        + ": " + Bodies.PROMPT);
    return via.post(PATH, body.toBuffer(), true, 60_000).transform(ar -> {
      if (ar.succeeded()) stats.add(ar.result());
      return loop(via, client, sent, stats, stop);
    });
  }

  /** Writes the fleet file, then waits for the router to apply it and for the first client leg on {@code engine}. */
  private static Change change(RouterProcess router, HttpWork via, Map<String, SimEngine> fleet, Map<String, String> roles,
                               Path journal, String phase, String iid, String what, SimEngine engine) {
    return measure(via, phase, iid, what, engine, () -> {
      try {
        writeFleet(router, fleet, roles, journal);
      } catch (Exception e) {
        throw new IllegalStateException("writing the fleet file: " + e.getMessage(), e);
      }
    });
  }

  private static boolean clientLeg(JsonObject request) {
    String rid = request.getString("request_id", "");
    return !rid.startsWith("probe-") && !rid.startsWith("preflight-");
  }

  private static double applied(HttpWork via) {
    HttpWork.Reply metrics = via.getBlocking("/metrics", 5_000);
    Matcher m = APPLIED.matcher(metrics.body().toString());
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  private static void writeFleet(RouterProcess router, Map<String, SimEngine> fleet, Map<String, String> roles, Path journal)
      throws Exception {
    JsonObject file = fleetFile(fleet, roles, journal);
    JsonObject running = new JsonObject(Files.readString(router.fleetFile()));
    running.put("engines", file.getJsonArray("engines"));
    Path tmp = router.fleetFile().resolveSibling(router.fleetFile().getFileName() + ".tmp");
    Files.writeString(tmp, running.encodePrettily());
    Files.move(tmp, router.fleetFile(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  private static JsonObject fleetFile(Map<String, SimEngine> fleet, Map<String, String> roles, Path journal) {
    JsonArray list = new JsonArray();
    fleet.forEach((iid, e) -> list.add(new JsonObject().put("iid", iid).put("url", e.url()).put("role", roles.get(iid))));
    return SimBench.unbalanced(new JsonObject().put("schema", "narwhal.fleet").put("schema_version", 1).put("model", SimBench.MODEL)
        .put("engines", list).put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("journal", new JsonObject().put("path", journal.toAbsolutePath().toString())));
  }
}
