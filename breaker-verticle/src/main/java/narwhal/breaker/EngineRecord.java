package narwhal.breaker;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.config.EngineConfig;
import narwhal.common.fault.FailureClass;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The breaker's view of one engine: placement state and why, streaks per failure class, quarantine end, probe in flight,
 * and the version of the state ({@code changedMs}, {@code changedBy}: which replica's book set it), compared when another
 * replica's version arrives.
 */
final class EngineRecord {
  EngineConfig engine;
  EngineState state = EngineState.SERVING;
  String cause;
  final Map<FailureClass, Integer> streaks = new EnumMap<>(FailureClass.class);
  /**
   * Consecutive failures of each class this replica saw itself: a streak never counts less (docs/operations.md#threat-model),
   * so a shared counter reset by a member without the secret cannot keep a failing engine serving.
   */
  final Map<FailureClass, Integer> own = new EnumMap<>(FailureClass.class);
  long quarantineUntilMs;
  String probeProducer;
  String probeCause;
  String lastProbe;
  boolean probing;
  long changedMs;
  String changedBy = "";
  /** When a readmission round may probe the engine next (breaker clock, epoch ms); 0: at the next round. */
  long probeDueMs;
  /** Doublings of the readmission interval earned by faults that recurred soon after readmission. */
  int backoff;
  /** When a probe last readmitted the engine (on any replica), 0 if never. */
  long readmittedMs;
  /** When this replica added the engine by a reload (its provisional state), 0 for engines it started with. */
  long addedAtMs;

  EngineRecord(EngineConfig engine) {
    this.engine = engine;
    for (FailureClass c : FailureClass.values()) {
      streaks.put(c, 0);
      own.put(c, 0);
    }
  }

  /** Sets a streak; a change is an action, so that it becomes cluster state. */
  int setStreak(FailureClass c, int streak, List<BreakerAction> actions) {
    if (streak == 0) own.put(c, 0);
    Integer was = streaks.put(c, streak);
    if (was == null || was != streak) actions.add(new BreakerAction.StreakChanged(engine.iid(), c, streak));
    return streak;
  }

  /** One more failure of class {@code c}: the streak is the cluster's count, or this replica's own when that is more. */
  int failed(FailureClass c, int clusterStreak, List<BreakerAction> actions) {
    int mine = own.merge(c, 1, Integer::sum);
    return setStreak(c, Math.max(Math.max(1, clusterStreak), mine), actions);
  }

  void reset(FailureClass c, List<BreakerAction> actions) {
    setStreak(c, 0, actions);
  }

  JsonObject toJson() {
    JsonObject s = new JsonObject();
    streaks.forEach((c, n) -> s.put(c.wireName(), n));
    return new JsonObject().put("iid", engine.iid()).put("state", state.wireName()).put("cause", cause).put("streaks", s)
        .put("quarantine_until_ms", quarantineUntilMs == 0 ? null : quarantineUntilMs).put("probing", probing)
        .put("last_probe", lastProbe).put("next_probe_ms", state == EngineState.HELD || state == EngineState.EJECTED ? probeDueMs : null)
        .put("backoff", backoff);
  }

  EngineStateEvent event() {
    long until = state == EngineState.QUARANTINED ? quarantineUntilMs
        : state == EngineState.HELD || state == EngineState.EJECTED ? probeDueMs : 0;
    return new EngineStateEvent(engine.iid(), state, cause, until, probeProducer, changedMs, changedBy);
  }
}
