package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.EngineState;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * When the breaker looks at engines (docs/operations.md#breaker-states): the probes the book asks for, each under the engine's
 * cluster-wide probe lock (a replica that cannot take it skips the probe); the monitor tick and readmission rounds; the
 * liveness sweep ({@link LivenessSweep}); and the whole-fleet validation of a wave restart.
 */
final class ProbeScheduler {
  private static final Logger LOG = Logger.getLogger(ProbeScheduler.class.getName());

  private final Vertx vertx;
  private final Supplier<NarwhalConfig> config;
  private final BreakerBook book;
  private final Prober prober;
  private final SharedBreakerState shared;
  private final ClusterSync sync;
  private final OutcomeIntake intake;
  private final BreakerMetrics metrics;
  private final Consumer<JsonObject> journal;
  private static final int PROBES_AT_ONCE = 8;

  private final List<Cadence> cadences;
  private final Deque<BreakerAction.Probe> waiting = new ArrayDeque<>();
  private int running;

  ProbeScheduler(Vertx vertx, Supplier<NarwhalConfig> config, BreakerBook book, Prober prober, SharedBreakerState shared,
                 ClusterSync sync, OutcomeIntake intake, LivenessSweep liveness, BreakerMetrics metrics, Consumer<JsonObject> journal) {
    this.vertx = vertx;
    this.config = config;
    this.book = book;
    this.prober = prober;
    this.shared = shared;
    this.sync = sync;
    this.intake = intake;
    this.metrics = metrics;
    this.journal = journal;
    this.cadences = List.of(
        new Cadence(vertx, () -> config.get().recovery().monitorIntervalMs(), () -> intake.step(book::tick)),
        new Cadence(vertx, () -> config.get().recovery().readmitIntervalMs(), () -> intake.step(book::readmissionRound)),
        new Cadence(vertx, () -> config.get().recovery().livenessIntervalMs(), liveness::sweep));
  }

  /**
   * Arms the monitor tick, readmission rounds and liveness sweep at the cadences of {@code recovery.*}; armed again
   * after a reload, each keeps its count and takes the new interval from its next tick (a tick already due is never
   * postponed).
   */
  void arm() {
    cadences.forEach(Cadence::arm);
  }

  void stop() {
    cadences.forEach(Cadence::stop);
  }

  /**
   * Runs a probe the book asked for under the engine's probe lock, or skips it when another replica holds the lock; at
   * most {@value #PROBES_AT_ONCE} at once (a reload adding many engines checks them all at once, bounded), the others
   * queued in the order asked.
   */
  void run(BreakerAction.Probe probe) {
    if (running >= PROBES_AT_ONCE) {
      waiting.add(probe);
      return;
    }
    running++;
    locked(probe).onComplete(done -> {
      running--;
      BreakerAction.Probe next = waiting.poll();
      if (next != null) run(next);
    });
  }

  private Future<Void> locked(BreakerAction.Probe probe) {
    String iid = probe.iid();
    EngineConfig target = engine(iid);
    if (target == null) {
      book.probeSkipped(iid);
      return Future.succeededFuture();
    }
    return shared.probeLock(iid, probeLeaseMs()).compose(lock -> {
      if (lock.isEmpty()) {
        book.probeSkipped(iid);
        LOG.fine(() -> "probe of " + iid + " skipped: another replica holds its probe lock");
        return Future.<Void>succeededFuture();
      }
      return shared.state(iid).otherwise((JsonObject) null)
          .compose(current -> {
            if (current != null) sync.applyShared(current);
            if (!book.needsProbe(iid, probe.kind())) {
              book.probeSkipped(iid);
              return Future.<Void>succeededFuture();
            }
            return probe(target, probe).compose(result -> {
              metrics.probed(iid, probe.kind(), result.outcome());
              journal.accept(new JsonObject().put("event", "probe").put("iid", iid).put("kind", probe.kind().wireName())
                  .put("outcome", result.outcome().wireName()).put("detail", result.detail()));
              return intake.step(() -> book.probeResult(iid, probe.kind(), result.outcome(), result.detail()));
            });
          })
          .onComplete(done -> lock.get().release());
    }).mapEmpty();
  }

  private Future<ProbeResult> probe(EngineConfig target, BreakerAction.Probe probe) {
    Future<ProbeResult> outcome = switch (probe.kind()) {
      case HEALTH -> prober.health(target);
      case INFERENCE -> prober.inference(target, probe.producerIid() == null ? null : engine(probe.producerIid()), this::serving,
          probe.streamed());
      case LIFECYCLE -> prober.lifecycle(target, this::serving, probe.streamed());
    };
    return outcome.otherwise(err -> ProbeResult.inconclusive("probe error: " + err.getMessage()));
  }

  /**
   * The readmission checks of an engine at an address the fleet does not route to yet (a reload re-pointing it):
   * what must pass before the router swaps it in.
   */
  Future<ProbeResult> candidate(EngineConfig engine) {
    return prober.lifecycle(engine, this::serving, false);
  }

  /** Validates every engine of the fleet together (a wave restart); the engines that failed, with why. */
  Future<List<String>> validateFleet() {
    List<EngineConfig> fleet = book.engines();
    List<Future<ProbeResult>> checks = fleet.stream().map(e -> prober.lifecycle(e, iid -> true, false)).toList();
    return Future.join(checks).transform(ar -> {
      List<String> failed = new ArrayList<>();
      for (int i = 0; i < checks.size(); i++) {
        ProbeResult r = checks.get(i).result();
        if (r == null || !r.passed()) failed.add(fleet.get(i).iid() + (r == null ? "" : " (" + r.detail() + ")"));
      }
      return Future.succeededFuture(failed);
    });
  }

  /** A probe's lease: longer than the longest probe (the lifecycle checks: three health-bounded reads, three legs). */
  private long probeLeaseMs() {
    return config.get().engine().lifecycleCheckBoundMs();
  }

  private boolean serving(String iid) {
    return book.state(iid).filter(s -> s == EngineState.SERVING).isPresent();
  }

  private EngineConfig engine(String iid) {
    return book.engines().stream().filter(e -> e.iid().equals(iid)).findFirst().orElse(null);
  }
}
