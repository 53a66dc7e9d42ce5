package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.LegOutcome;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * Takes the router's leg outcomes into the {@link BreakerBook} (a failure counted cluster-wide first) and carries out
 * what every step of the book decides: state changes and streak changes become cluster state, probes are handed to
 * the scheduler, and every state change is counted, logged and journaled (decided by this replica: {@code decided_by}
 * names it, as the replicas that take the change over name it).
 */
final class OutcomeIntake {
  private static final Logger LOG = Logger.getLogger(OutcomeIntake.class.getName());

  private final BreakerBook book;
  private final ClusterSync sync;
  private final BreakerMetrics metrics;
  private final Consumer<JsonObject> journal;
  private Consumer<BreakerAction.Probe> probes;

  OutcomeIntake(BreakerBook book, ClusterSync sync, BreakerMetrics metrics, Consumer<JsonObject> journal) {
    this.book = book;
    this.sync = sync;
    this.metrics = metrics;
    this.journal = journal;
    this.probes = probe -> book.probeSkipped(probe.iid());
  }

  /** Where the probes the book asks for go. */
  void probes(Consumer<BreakerAction.Probe> runner) {
    this.probes = runner;
  }

  void outcome(LegOutcome o) {
    if (!book.knows(o.iid())) return;
    if (o.success() || o.failureClass() == null) {
      step(() -> book.record(o));
      return;
    }
    sync.countFailure(o.iid(), o.failureClass()).onSuccess(streak -> step(() -> book.record(o, streak)));
  }

  /** Runs one step of the book and carries out its actions; completes when its state changes are written. */
  Future<Void> step(Supplier<List<BreakerAction>> step) {
    List<Future<Void>> writes = new ArrayList<>();
    for (BreakerAction action : step.get()) {
      if (action instanceof BreakerAction.StateChange change) {
        writes.add(changed(change));
      } else if (action instanceof BreakerAction.StreakChanged streak) {
        sync.streakChanged(streak);
      } else if (action instanceof BreakerAction.Probe probe) {
        probes.accept(probe);
      } else if (action instanceof BreakerAction.FleetHold) {
        writes.add(sync.publish(book.fleetHoldEvent()));
      }
    }
    return Future.join(writes).mapEmpty();
  }

  private Future<Void> changed(BreakerAction.StateChange change) {
    if (change.to() == EngineState.EJECTED && change.from() != EngineState.EJECTED) metrics.ejected(change.iid(), change.cause());
    if (change.to() == EngineState.SERVING && (change.from() == EngineState.EJECTED || change.from() == EngineState.HELD)) {
      metrics.readmitted(change.iid(), change.cause());
    }
    LOG.info(() -> "engine " + change.iid() + ": " + change.from().wireName() + " → " + change.to().wireName() + " (" + change.cause() + ")");
    journal.accept(new JsonObject().put("event", "engine_state").put("iid", change.iid()).put("from", change.from().wireName())
        .put("to", change.to().wireName()).put("cause", change.cause()).put("decided_by", book.origin()));
    return sync.publish(book.stateEvent(change.iid()).orElseThrow().withCause(change.cause()));
  }
}
