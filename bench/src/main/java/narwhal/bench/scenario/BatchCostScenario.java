package narwhal.bench.scenario;

import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.Exchange;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.RunStats;
import narwhal.bench.probe.ProcessRss;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.Progress;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issue 40: what one batched completions request of 10,000 one-token prompts costs a replica. The router's CPU time
 * and RSS growth for the batch refused by {@code serving.max_batch_prompts} and for the batch answered (the bound
 * raised to fit it), each alone; then a concurrent client's short requests, timed without a batch (baseline) and
 * while batches run one after the other beside them.
 */
public final class BatchCostScenario implements Scenario {
  private static final String PATH = "/v1/completions";

  @Override
  public String name() {
    return "batch-cost";
  }

  @Override
  public String summary() {
    return "issue 40: a 10,000-prompt batch's router CPU and RSS growth, and a concurrent client's latency beside a baseline";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    boolean smoke = env.smoke();
    int prompts = smoke ? 500 : 10_000;
    double measureS = smoke ? 2 : 15;
    int clients = 4;
    BenchReport report = env.report();
    Progress progress = env.progress();
    Path journal = env.tmp().resolve("journal.jsonl");
    Files.deleteIfExists(journal);
    SimBench fleet = env.own(SimBench.start(List.of(SimBench.engine("P0", "prefill"), SimBench.engine("D0", "decode"))));
    JsonObject cfg = SimBench.set(SimBench.unbalanced(fleet.fleetFile(journal, 0)), "serving", "max_batch_prompts", prompts);
    progress.say("starting the router replica (-Xmx1g), serving.max_batch_prompts " + prompts);
    RouterProcess router = env.own(RouterProcess.start(env, name(), cfg, new RouterProcess.Options(List.of("-Xmx1g"), false, false)));
    LoadGenerator load = env.own(new LoadGenerator());
    HttpWork via = new HttpWork(load.vertx(), load.client(64), "127.0.0.1", router.port());
    report.layout("bench process: HTTP clients (Vert.x) + simulated P0 (prefill) and D0 (decode), zero latency")
        .layout("router: one replica, its own JVM (-Xmx1g), pid " + router.pid() + ", serving.max_batch_prompts " + prompts
            + ", other serving limits at their defaults")
        .layout("all on one 2-core machine, shared with other users' builds and tests");
    report.parameter("prompts", prompts).parameter("clients", clients).parameter("measure_s", measureS);
    Buffer probe = Bodies.completion(8, false).toBuffer();
    Buffer batch = batch(prompts);
    Buffer over = batch(prompts + 1);

    progress.say("warm-up: short requests and one batch");
    load.closedLoop("warm-up", clients, 0, smoke ? 1 : 10, 10, () -> via.post(PATH, probe, false, 10_000));
    via.postBlocking(PATH, batch, false, 300_000);

    progress.say("a batch of " + (prompts + 1) + " prompts, over the bound, alone");
    Cost refused = cost(router, () -> via.postBlocking(PATH, over, false, 60_000));
    progress.say("a batch of " + prompts + " prompts, alone");
    Cost answered = cost(router, () -> via.postBlocking(PATH, batch, false, 300_000));

    progress.say(clients + " clients' short requests, no batch (" + measureS + " s)");
    RunStats baseline = load.closedLoop("baseline", clients, 1, measureS, 10, () -> via.post(PATH, probe, false, 10_000));
    progress.say(clients + " clients' short requests beside batches of " + prompts + " run one after another");
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger batches = new AtomicInteger();
    AtomicInteger batchesFailed = new AtomicInteger();
    Promise<Void> batchesDone = Promise.promise();
    Runnable[] next = new Runnable[1];
    next[0] = () -> via.post(PATH, batch, false, 300_000).onComplete(ar -> {
      batches.incrementAndGet();
      if (ar.failed() || !ar.result().ok()) batchesFailed.incrementAndGet();
      if (stop.get()) batchesDone.tryComplete(); else next[0].run();
    });
    via.vertxRun(next[0]);
    RunStats beside = load.closedLoop("beside batches", clients, 1, measureS, 10, () -> via.post(PATH, probe, false, 10_000));
    stop.set(true);
    LoadGenerator.join(batchesDone.future(), 330);

    ResultTable costs = new ResultTable("one batch, alone", "batch", "answer", "wall ms", "router CPU s", "RSS before MiB",
        "RSS peak MiB", "RSS after MiB", "growth (peak) MiB");
    costs.row((prompts + 1) + " prompts (over the bound)", refused.answer(), refused.wallMs(), Fmt.num(refused.cpuS(), 2),
        Fmt.mib(refused.rssBefore()), Fmt.mib(refused.rssPeak()), Fmt.mib(refused.rssAfter()), Fmt.mib(refused.growth()));
    costs.row(prompts + " prompts (answered)", answered.answer(), answered.wallMs(), Fmt.num(answered.cpuS(), 2),
        Fmt.mib(answered.rssBefore()), Fmt.mib(answered.rssPeak()), Fmt.mib(answered.rssAfter()), Fmt.mib(answered.growth()));
    report.table(costs);
    ResultTable latency = new ResultTable("a concurrent client's short requests (" + clients + " clients, max_tokens 8)", "phase",
        "requests", "errors", "p50 ms", "p99 ms", "max ms");
    latency.row("baseline, no batch", baseline.completed(), baseline.errors(), Fmt.pct(baseline.latency(), 50),
        Fmt.pct(baseline.latency(), 99), Fmt.ms(baseline.latency().max()));
    latency.row("beside " + batches.get() + " batches of " + prompts, beside.completed(), beside.errors(),
        Fmt.pct(beside.latency(), 50), Fmt.pct(beside.latency(), 99), Fmt.ms(beside.latency().max()));
    report.table(latency);

    report.verdict(Verdict.check("issue 40", "a batch over serving.max_batch_prompts refused with 400",
        refused.answer(), "400", refused.status() == 400));
    report.verdict(Verdict.perf("issue 40", "router CPU for the refused batch", Fmt.num(refused.cpuS(), 2) + " s", "≤ 1 s",
        refused.cpuS() <= 1.0));
    report.verdict(Verdict.check("issue 40", "the batch answered", answered.answer() + ", " + batchesFailed.get() + " of "
        + batches.get() + " concurrent batches failed", "200, 0 failed", answered.status() == 200 && batchesFailed.get() == 0));
    report.verdict(Verdict.perf("issue 40", "router CPU for the answered batch (" + 2 * prompts + " legs)",
        Fmt.num(answered.cpuS(), 2) + " s", "≤ 1 s", answered.cpuS() <= 1.0));
    report.verdict(Verdict.perf("issue 40", "router RSS growth for the answered batch (peak − before)",
        Fmt.mib(answered.growth()) + " MiB", "≤ 200 MiB", answered.growth() <= 200L << 20));
    double p99Base = baseline.latency().percentileMs(99);
    double p99Beside = beside.latency().percentileMs(99);
    report.verdict(Verdict.perf("issue 40", "concurrent client's p99 beside batches vs baseline",
        Fmt.num(p99Beside, 1) + " ms vs " + Fmt.num(p99Base, 1) + " ms", "≤ 2 × baseline + 50 ms",
        p99Beside <= 2 * p99Base + 50));
    report.verdict(Verdict.check("issue 40", "concurrent client's errors beside batches", String.valueOf(beside.errors()), "0",
        beside.errors() == 0));
    report.raw("baseline", baseline.toJson()).raw("beside", beside.toJson());
  }

  /** One batched request: {@code n} prompts of one token each, a different token per prompt, one output token each. */
  static Buffer batch(int n) {
    JsonArray prompts = new JsonArray();
    for (int i = 0; i < n; i++) prompts.add(new JsonArray().add(i % 30_000 + 1));
    return Bodies.completion(1, false).put("prompt", prompts).toBuffer();
  }

  /** What one request cost the router: its answer, wall time, CPU seconds, RSS before, at its peak, and after. */
  record Cost(int status, String answer, long wallMs, double cpuS, long rssBefore, long rssPeak, long rssAfter) {
    long growth() {
      return rssPeak - rssBefore;
    }
  }

  /** Runs {@code request} alone, reading the router's CPU before and after and its RSS every 50 ms meanwhile. */
  static Cost cost(RouterProcess router, java.util.function.Supplier<Exchange> request) throws InterruptedException {
    long rssBefore = ProcessRss.bytes(router.pid());
    AtomicLong peak = new AtomicLong(rssBefore);
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> {
      while (sampling.get()) {
        peak.accumulateAndGet(ProcessRss.bytes(router.pid()), Math::max);
        try {
          Thread.sleep(50);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "rss-sampler");
    sampler.setDaemon(true);
    sampler.start();
    double cpuBefore = router.cpuSeconds();
    long t0 = System.nanoTime();
    Exchange e = request.get();
    long wallMs = (System.nanoTime() - t0) / 1_000_000;
    double cpu = router.cpuSeconds() - cpuBefore;
    sampling.set(false);
    sampler.join();
    long rssAfter = ProcessRss.bytes(router.pid());
    peak.accumulateAndGet(rssAfter, Math::max);
    String answer = e.status() == 0 ? e.outcome().name().toLowerCase() : String.valueOf(e.status());
    return new Cost(e.status(), answer, wallMs, cpu, rssBefore, peak.get(), rssAfter);
  }
}
