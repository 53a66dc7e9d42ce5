package narwhal.breaker;

import io.vertx.core.json.JsonArray;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.RecoveryConfig;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The breaker's state machine (CONTRACT §6), free of I/O and driven by an injected clock: it takes leg
 * outcomes, probe results, liveness results, clock ticks and admin commands, and answers with the
 * {@link BreakerAction}s to carry out. Streaks are consecutive failures per class; a class's verdict comes at
 * {@code recovery.eject_after}. Holds and quarantines never take away the last engine covering a role.
 */
public final class BreakerBook {
  private static final Set<FailureClass> HOLDING = EnumSet.of(FailureClass.STREAM, FailureClass.KV_HANDOFF, FailureClass.INFERENCE_STATUS);
  private static final Set<FailureClass> HEALTH_PROBED = EnumSet.of(FailureClass.TIMEOUT, FailureClass.OVERLOAD);

  private final Map<String, EngineRecord> engines = new LinkedHashMap<>();
  private final LongSupplier clockMs;
  private RecoveryConfig recovery;
  private boolean contractPinned;
  private boolean fleetHold;

  public BreakerBook(List<EngineConfig> engines, RecoveryConfig recovery, boolean contractPinned, LongSupplier clockMs) {
    this.recovery = recovery;
    this.contractPinned = contractPinned;
    this.clockMs = clockMs;
    setEngines(engines);
  }

  /** Applies a reloaded engine list and recovery settings; kept engines keep their state and streaks. */
  public void reconfigure(List<EngineConfig> list, RecoveryConfig recovery, boolean contractPinned) {
    this.recovery = recovery;
    this.contractPinned = contractPinned;
    setEngines(list);
  }

  private void setEngines(List<EngineConfig> list) {
    Map<String, EngineRecord> kept = new LinkedHashMap<>();
    for (EngineConfig e : list) {
      EngineRecord r = engines.getOrDefault(e.iid(), new EngineRecord(e));
      r.engine = e;
      kept.put(e.iid(), r);
    }
    engines.clear();
    engines.putAll(kept);
  }

  /** A leg's outcome, as the router reported it. */
  public List<BreakerAction> record(LegOutcome o) {
    EngineRecord r = engines.get(o.iid());
    List<BreakerAction> actions = new ArrayList<>();
    if (r == null) return actions;
    if (o.success()) {
      r.reset(o.phase() == Phase.PREFILL ? FailureClass.KV_HANDOFF : FailureClass.STREAM);
      for (FailureClass c : List.of(FailureClass.CONNECTION, FailureClass.TIMEOUT, FailureClass.OVERLOAD, FailureClass.INFERENCE_STATUS)) {
        r.reset(c);
      }
      return actions;
    }
    if (o.failureClass() == null) {
      if ("engine_rejected".equals(o.reason())) r.reset(FailureClass.CONNECTION);
      return actions;
    }
    int streak = r.bump(o.failureClass());
    if (o.failureClass() == FailureClass.STREAM && o.producerIid() != null) r.probeProducer = o.producerIid();
    if (r.state != EngineState.SERVING) return actions;
    if (streak >= recovery.ejectAfter()) {
      verdict(r, o.failureClass(), actions);
    } else if (o.quarantine() && recovery.failureQuarantineS() > 0 && !lastCover(r)) {
      r.quarantineUntilMs = clockMs.getAsLong() + recovery.failureQuarantineMs();
      move(r, EngineState.QUARANTINED, "quarantine", actions);
    }
    return actions;
  }

  private void verdict(EngineRecord r, FailureClass c, List<BreakerAction> actions) {
    if (c == FailureClass.CONNECTION) {
      r.reset(c);
      eject(r, c.wireName(), actions);
    } else if (HEALTH_PROBED.contains(c)) {
      r.probeCause = c.wireName();
      probe(r, ProbeKind.HEALTH, null, actions);
    } else if (HOLDING.contains(c)) {
      if (lastCover(r)) return;
      move(r, EngineState.HELD, c.wireName(), actions);
      probe(r, ProbeKind.INFERENCE, r.probeProducer, actions);
    }
  }

  /** A probe's result. */
  public List<BreakerAction> probeResult(String iid, ProbeKind kind, ProbeOutcome outcome) {
    return probeResult(iid, kind, outcome, null);
  }

  /** A probe's result with what it found, kept as the engine's last probe for {@code /narwhal/state}. */
  public List<BreakerAction> probeResult(String iid, ProbeKind kind, ProbeOutcome outcome, String detail) {
    EngineRecord r = engines.get(iid);
    List<BreakerAction> actions = new ArrayList<>();
    if (r == null) return actions;
    r.probing = false;
    r.lastProbe = kind.wireName() + " " + outcome.wireName() + (detail == null ? "" : ": " + detail);
    switch (outcome) {
      case PASSED -> {
        if (r.state == EngineState.HELD || r.state == EngineState.EJECTED) {
          if (fleetHold) return actions;
          clearStreaks(r);
          r.probeProducer = null;
          move(r, EngineState.SERVING, kind.wireName() + "_probe", actions);
        } else {
          r.reset(FailureClass.TIMEOUT);
          r.reset(FailureClass.OVERLOAD);
        }
      }
      case FAILED -> {
        if (r.state != EngineState.EJECTED) {
          eject(r, r.state == EngineState.HELD ? r.cause : r.probeCause != null ? r.probeCause : kind.wireName() + "_probe", actions);
        }
      }
      case INCONCLUSIVE -> { }
    }
    return actions;
  }

  /** A liveness sweep's {@code /health} answer for a serving engine. */
  public List<BreakerAction> liveness(String iid, boolean healthy) {
    EngineRecord r = engines.get(iid);
    List<BreakerAction> actions = new ArrayList<>();
    if (r == null || r.state != EngineState.SERVING) return actions;
    if (healthy) {
      r.reset(FailureClass.LIVENESS);
    } else if (r.bump(FailureClass.LIVENESS) >= recovery.livenessMisses()) {
      r.reset(FailureClass.LIVENESS);
      eject(r, FailureClass.LIVENESS.wireName(), actions);
    }
    return actions;
  }

  /** Ends quarantines whose time has come. */
  public List<BreakerAction> tick() {
    List<BreakerAction> actions = new ArrayList<>();
    long now = clockMs.getAsLong();
    for (EngineRecord r : engines.values()) {
      if (r.state == EngineState.QUARANTINED && now >= r.quarantineUntilMs) {
        r.quarantineUntilMs = 0;
        move(r, EngineState.SERVING, "quarantine_expired", actions);
      }
    }
    return actions;
  }

  /** The probes due at a readmission round: held engines and ejected ones (none alone under the whole-wave policy). */
  public List<BreakerAction> readmissionRound() {
    List<BreakerAction> actions = new ArrayList<>();
    if (fleetHold) return actions;
    for (EngineRecord r : engines.values()) {
      if (r.state == EngineState.HELD) {
        probe(r, ProbeKind.INFERENCE, r.probeProducer, actions);
      } else if (r.state == EngineState.EJECTED && !"admin".equals(r.cause)) {
        boolean needsInference = HOLDING.stream().anyMatch(c -> c.wireName().equals(r.cause));
        probe(r, contractPinned ? ProbeKind.LIFECYCLE : needsInference ? ProbeKind.INFERENCE : ProbeKind.HEALTH, r.probeProducer, actions);
      }
    }
    return actions;
  }

  /** Engines a liveness sweep checks now. */
  public List<String> servingEngines() {
    return engines.values().stream().filter(r -> r.state == EngineState.SERVING).map(r -> r.engine.iid()).toList();
  }

  // Admin commands (CONTRACT §8.1)

  public List<BreakerAction> eject(String iid) {
    return withRecord(iid, (r, actions) -> eject(r, "admin", actions));
  }

  public List<BreakerAction> readmit(String iid) {
    return withRecord(iid, (r, actions) -> {
      clearStreaks(r);
      r.quarantineUntilMs = 0;
      move(r, EngineState.SERVING, "admin", actions);
    });
  }

  public List<BreakerAction> quarantine(String iid, double seconds) {
    return withRecord(iid, (r, actions) -> {
      r.quarantineUntilMs = clockMs.getAsLong() + (long) (seconds * 1000);
      move(r, EngineState.QUARANTINED, "admin", actions);
    });
  }

  public List<BreakerAction> drain(String iid, boolean drain) {
    return withRecord(iid, (r, actions) -> {
      if (drain) move(r, EngineState.DRAINING, "admin", actions);
      else if (r.state == EngineState.DRAINING) move(r, EngineState.SERVING, "admin", actions);
    });
  }

  /** The whole fleet passed validation together: every engine serves again and the fleet hold lifts. */
  public List<BreakerAction> waveRestarted() {
    List<BreakerAction> actions = new ArrayList<>();
    for (EngineRecord r : engines.values()) {
      clearStreaks(r);
      r.probeProducer = null;
      move(r, EngineState.SERVING, "wave_restart", actions);
    }
    if (fleetHold) {
      fleetHold = false;
      actions.add(new BreakerAction.FleetHold(false));
    }
    return actions;
  }

  public boolean knows(String iid) {
    return engines.containsKey(iid);
  }

  public boolean fleetHold() {
    return fleetHold;
  }

  public Optional<EngineState> state(String iid) {
    EngineRecord r = engines.get(iid);
    return r == null ? Optional.empty() : Optional.of(r.state);
  }

  public int streak(String iid, FailureClass c) {
    EngineRecord r = engines.get(iid);
    return r == null ? 0 : r.streaks.get(c);
  }

  public List<EngineConfig> engines() {
    return engines.values().stream().map(r -> r.engine).toList();
  }

  public JsonArray snapshot() {
    JsonArray out = new JsonArray();
    engines.values().forEach(r -> out.add(r.toJson()));
    return out;
  }

  private interface Change {
    void apply(EngineRecord r, List<BreakerAction> actions);
  }

  private List<BreakerAction> withRecord(String iid, Change change) {
    EngineRecord r = engines.get(iid);
    if (r == null) throw new IllegalArgumentException("unknown engine " + iid);
    List<BreakerAction> actions = new ArrayList<>();
    change.apply(r, actions);
    return actions;
  }

  private void eject(EngineRecord r, String cause, List<BreakerAction> actions) {
    move(r, EngineState.EJECTED, cause, actions);
    if (recovery.wholeWave() && !fleetHold) {
      fleetHold = true;
      actions.add(new BreakerAction.FleetHold(true));
    }
  }

  private void probe(EngineRecord r, ProbeKind kind, String producer, List<BreakerAction> actions) {
    if (r.probing) return;
    r.probing = true;
    actions.add(new BreakerAction.Probe(r.engine.iid(), kind, producer));
  }

  private void move(EngineRecord r, EngineState to, String cause, List<BreakerAction> actions) {
    EngineState from = r.state;
    r.state = to;
    r.cause = to == EngineState.SERVING ? null : cause;
    if (from != to) actions.add(new BreakerAction.StateChange(r.engine.iid(), from, to, cause));
  }

  private static void clearStreaks(EngineRecord r) {
    for (FailureClass c : FailureClass.values()) r.reset(c);
  }

  /** Whether taking {@code r} out would leave one of its roles with no serving engine. */
  private boolean lastCover(EngineRecord r) {
    for (Phase phase : Phase.values()) {
      boolean covers = phase == Phase.PREFILL ? r.engine.role().canPrefill() : r.engine.role().canDecode();
      if (!covers) continue;
      boolean other = engines.values().stream().anyMatch(o -> o != r && o.state == EngineState.SERVING
          && (phase == Phase.PREFILL ? o.engine.role().canPrefill() : o.engine.role().canDecode()));
      if (!other) return true;
    }
    return false;
  }
}
