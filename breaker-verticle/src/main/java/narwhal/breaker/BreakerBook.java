package narwhal.breaker;

import io.vertx.core.json.JsonArray;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.LegOutcome;
import narwhal.common.bus.StateVersion;
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
 * The breaker's state machine (docs/operations.md#breaker-states), free of I/O and driven by an injected clock: it takes leg
 * outcomes, probe results, liveness results, clock ticks and admin commands, and answers with the
 * {@link BreakerAction}s to carry out, streak changes among them. Streaks are consecutive failures per class; a class's verdict comes at
 * {@code recovery.eject_after}. Holds and quarantines never take away the last engine covering a role for its model.
 *
 * <p>In a cluster (docs/architecture.md#what-lives-in-the-cluster) each replica keeps a book: a failure is recorded with the cluster-wide streak the
 * caller counted ({@link #record(LegOutcome, int)}), and states, streaks and the fleet hold decided by other replicas
 * are taken over with {@link #applyRemote}, {@link #applyStreak} and {@link #applyFleetHold}. Every state carries a
 * version (time of change, deciding replica) so the newest wins whatever order versions arrive in.
 */
final class BreakerBook {
  private static final Set<FailureClass> HOLDING = EnumSet.of(FailureClass.STREAM, FailureClass.KV_HANDOFF, FailureClass.INFERENCE_STATUS);
  private static final Set<FailureClass> HEALTH_PROBED = EnumSet.of(FailureClass.TIMEOUT, FailureClass.OVERLOAD);
  /** Doublings of the readmission interval a recurring fault can earn an engine (32 intervals at most). */
  static final int MAX_BACKOFF = 5;
  /** The longest admin quarantine (a year): longer ones are refused, not overflowed. */
  static final double MAX_QUARANTINE_S = 365 * 24 * 3600.0;

  private final Map<String, EngineRecord> engines = new LinkedHashMap<>();
  private final LongSupplier clockMs;
  private final String origin;
  private RecoveryConfig recovery;
  private boolean contractPinned;
  private boolean fleetHold;
  private long fleetHoldChangedMs;
  private String fleetHoldBy = "";
  /** The cluster's rule for the shared streaks ({@link #judgeStreaksBy}); 0: this book's own recovery settings. */
  private int clusterEjectAfter;
  private int clusterLivenessMisses;

  /** Causes of an ejection that are an operator's decision, which a re-pointed engine's passed checks do not end. */
  private static final java.util.Set<String> OPERATOR_CAUSES = java.util.Set.of("admin", "undrain");

  public BreakerBook(List<EngineConfig> engines, RecoveryConfig recovery, boolean contractPinned, LongSupplier clockMs) {
    this(engines, recovery, contractPinned, clockMs, "");
  }

  /** @param origin this replica's name, stamped on the states it decides */
  public BreakerBook(List<EngineConfig> engines, RecoveryConfig recovery, boolean contractPinned, LongSupplier clockMs,
                     String origin) {
    this.recovery = recovery;
    this.contractPinned = contractPinned;
    this.clockMs = clockMs;
    this.origin = origin;
    setEngines(engines);
  }

  /**
   * Applies a reloaded engine list and recovery settings; kept engines keep their state and streaks, removed ones
   * are forgotten, added ones start ejected ("added") so that readmission checks them before any placement. An added
   * engine's state carries no version ({@link StateVersion#NONE}): it is this replica's guess, not a decision, so any
   * state the cluster holds for the engine (a drain, an admin ejection) wins over it. An engine whose {@code url},
   * {@code role}, {@code attestation_url} or {@code kv_side_channel} changed is another engine under the same iid: it is
   * ejected ("changed") until its readmission checks pass. Both are checked at once (the lifecycle checks of a
   * readmission round, asked for here), not at the next round, so each serves as soon as its checks pass.
   */
  public List<BreakerAction> reconfigure(List<EngineConfig> list, RecoveryConfig recovery, boolean contractPinned) {
    return reconfigure(list, recovery, contractPinned, java.util.Set.of());
  }

  /**
   * As {@link #reconfigure(List, RecoveryConfig, boolean)}, but a changed engine named in {@code checked} passed its
   * readmission checks at its new address before the change was applied (make before break,
   * docs/operations.md#replacing-and-scaling-engines): it keeps serving without a gap; one ejected by faults of its old
   * address serves again ("repointed"); an operator's drain, ejection or quarantine stays.
   */
  public List<BreakerAction> reconfigure(List<EngineConfig> list, RecoveryConfig recovery, boolean contractPinned,
                                         java.util.Set<String> checked) {
    this.recovery = recovery;
    this.contractPinned = contractPinned;
    List<String> added = list.stream().map(EngineConfig::iid).filter(iid -> !engines.containsKey(iid)).toList();
    List<String> changed = list.stream().filter(e -> engines.containsKey(e.iid()) && !engines.get(e.iid()).engine.equals(e))
        .map(EngineConfig::iid).toList();
    setEngines(list);
    List<BreakerAction> actions = new ArrayList<>();
    added.forEach(iid -> provisional(engines.get(iid), actions));
    for (String iid : changed) {
      EngineRecord r = engines.get(iid);
      clearStreaks(r, actions);
      r.probeProducer = null;
      r.probeDueMs = 0;
      r.backoff = 0;
      if (!checked.contains(iid)) {
        move(r, EngineState.EJECTED, "changed", actions);
      } else if (r.state == EngineState.EJECTED && !OPERATOR_CAUSES.contains(r.cause) || r.state == EngineState.HELD) {
        move(r, EngineState.SERVING, "repointed", actions);
      }
    }
    if (!fleetHold) {
      for (String iid : added) readmissionProbe(engines.get(iid), actions);
      for (String iid : changed) readmissionProbe(engines.get(iid), actions);
    }
    return actions;
  }

  /**
   * Takes engines whose checks at start failed out of placement (ejected, cause {@code unchecked}) and checks them at
   * once by the readmission checks: they serve once these pass (an engine still loading: at a later readmission round).
   * The state is a decision (versioned): an engine that fails its checks is out for every replica until they pass.
   */
  public List<BreakerAction> unchecked(java.util.Collection<String> iids) {
    List<BreakerAction> actions = new ArrayList<>();
    for (String iid : iids) {
      EngineRecord r = engines.get(iid);
      if (r == null || r.state != EngineState.SERVING) continue;
      r.probeDueMs = 0;
      move(r, EngineState.EJECTED, "unchecked", actions);
      if (!fleetHold) readmissionProbe(r, actions);
    }
    return actions;
  }

  private void provisional(EngineRecord r, List<BreakerAction> actions) {
    EngineState from = r.state;
    r.state = EngineState.EJECTED;
    r.cause = "added";
    r.changedMs = 0;
    r.changedBy = "";
    r.probeDueMs = 0;
    r.addedAtMs = clockMs.getAsLong();
    actions.add(new BreakerAction.StateChange(r.engine.iid(), from, EngineState.EJECTED, "added"));
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

  /**
   * Judges the streaks the cluster shares by {@code ejectAfter} and {@code livenessMisses} — the settings of the
   * replica the cluster's rule names (docs/operations.md#what-the-cluster-remembers) — instead of this book's own
   * {@code recovery.eject_after} and {@code recovery.liveness_misses}; 0 for either: this book's own again.
   */
  public void judgeStreaksBy(int ejectAfter, int livenessMisses) {
    this.clusterEjectAfter = ejectAfter;
    this.clusterLivenessMisses = livenessMisses;
  }

  /** The streak length a verdict comes at: the cluster's rule when one is set, else {@code recovery.eject_after}. */
  public int ejectAfter() {
    return clusterEjectAfter > 0 ? clusterEjectAfter : recovery.ejectAfter();
  }

  /** The liveness misses in a row that eject: the cluster's rule when one is set, else {@code recovery.liveness_misses}. */
  public int livenessMisses() {
    return clusterLivenessMisses > 0 ? clusterLivenessMisses : recovery.livenessMisses();
  }

  /** A leg's outcome, as the router reported it; a failure extends this book's streak by one. */
  public List<BreakerAction> record(LegOutcome o) {
    EngineRecord r = engines.get(o.iid());
    int streak = r == null || o.success() || o.failureClass() == null ? 0 : r.streaks.get(o.failureClass()) + 1;
    return record(o, streak);
  }

  /**
   * A leg's outcome with, for a failure of a class, the streak it makes cluster-wide (counted by the caller in shared
   * state, this failure included); a success resets the classes it proves healthy as {@link #record(LegOutcome)} does.
   */
  public List<BreakerAction> record(LegOutcome o, int clusterStreak) {
    EngineRecord r = engines.get(o.iid());
    List<BreakerAction> actions = new ArrayList<>();
    if (r == null) return actions;
    if (o.success()) {
      r.reset(o.phase() == Phase.PREFILL ? FailureClass.KV_HANDOFF : FailureClass.STREAM, actions);
      for (FailureClass c : List.of(FailureClass.CONNECTION, FailureClass.TIMEOUT, FailureClass.OVERLOAD, FailureClass.INFERENCE_STATUS,
          FailureClass.MODEL)) {
        r.reset(c, actions);
      }
      return actions;
    }
    if (o.failureClass() == null) {
      if ("engine_rejected".equals(o.reason())) r.reset(FailureClass.CONNECTION, actions);
      return actions;
    }
    int streak = r.failed(o.failureClass(), clusterStreak, actions);
    if (o.failureClass() == FailureClass.STREAM && o.producerIid() != null) r.probeProducer = o.producerIid();
    if (r.state != EngineState.SERVING) return actions;
    if (streak >= ejectAfter() || o.failureClass() == FailureClass.MODEL) {
      verdict(r, o.failureClass(), actions);
    } else if (o.quarantine() && recovery.failureQuarantineS() > 0 && !lastCover(r)) {
      r.quarantineUntilMs = clockMs.getAsLong() + recovery.failureQuarantineMs();
      move(r, EngineState.QUARANTINED, "quarantine", actions);
    }
    return actions;
  }

  private void verdict(EngineRecord r, FailureClass c, List<BreakerAction> actions) {
    if (c == FailureClass.CONNECTION || c == FailureClass.MODEL) {
      r.reset(c, actions);
      eject(r, c.wireName(), actions);
    } else if (HEALTH_PROBED.contains(c)) {
      r.probeCause = c.wireName();
      probe(r, ProbeKind.HEALTH, null, actions);
    } else if (HOLDING.contains(c)) {
      if (lastCover(r)) return;
      move(r, EngineState.HELD, c.wireName(), actions);
      backOff(r);
    }
  }

  /**
   * When a held or ejected engine is probed next: one readmission interval from now, doubled for each time in a row the
   * engine failed again soon (within two intervals) after it was readmitted, up to {@value #MAX_BACKOFF} doublings; a
   * systemic fault then shows as held engines, not as engines flapping in and out of service.
   */
  private void backOff(EngineRecord r) {
    long now = clockMs.getAsLong();
    long interval = recovery.readmitIntervalMs();
    boolean recurred = r.readmittedMs > 0 && now - r.readmittedMs < 2 * interval;
    r.backoff = recurred ? Math.min(MAX_BACKOFF, r.backoff + 1) : 0;
    r.probeDueMs = now + (interval << r.backoff);
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
          clearStreaks(r, actions);
          r.probeProducer = null;
          r.readmittedMs = clockMs.getAsLong();
          move(r, EngineState.SERVING, kind.wireName() + "_probe", actions);
        } else {
          r.reset(FailureClass.TIMEOUT, actions);
          r.reset(FailureClass.OVERLOAD, actions);
        }
      }
      case FAILED -> {
        if (r.state != EngineState.EJECTED) {
          eject(r, r.state == EngineState.HELD ? r.cause : r.probeCause != null ? r.probeCause : kind.wireName() + "_probe", actions);
        }
        if (r.state == EngineState.EJECTED) r.probeDueMs = clockMs.getAsLong() + (recovery.readmitIntervalMs() << r.backoff);
      }
      case INCONCLUSIVE -> { }
    }
    return actions;
  }

  /** A liveness sweep's {@code /health} answer for a serving engine. */
  public List<BreakerAction> liveness(String iid, boolean healthy) {
    EngineRecord r = engines.get(iid);
    return liveness(iid, healthy, r == null ? 0 : r.streaks.get(FailureClass.LIVENESS) + 1);
  }

  /** A liveness answer with, for a miss, the cluster-wide count of consecutive misses (this one included). */
  public List<BreakerAction> liveness(String iid, boolean healthy, int clusterMisses) {
    EngineRecord r = engines.get(iid);
    List<BreakerAction> actions = new ArrayList<>();
    if (r == null || r.state != EngineState.SERVING) return actions;
    if (healthy) {
      r.reset(FailureClass.LIVENESS, actions);
    } else if (r.failed(FailureClass.LIVENESS, clusterMisses, actions) >= livenessMisses()) {
      r.reset(FailureClass.LIVENESS, actions);
      eject(r, FailureClass.LIVENESS.wireName(), actions);
    }
    return actions;
  }

  /**
   * Ends quarantines whose time has come: the engine is ejected ("quarantine_expired") and probed at once by the
   * readmission checks, so it serves again only once it answers; an engine that died while quarantined stays out.
   */
  public List<BreakerAction> tick() {
    List<BreakerAction> actions = new ArrayList<>();
    long now = clockMs.getAsLong();
    for (EngineRecord r : engines.values()) {
      if (r.state == EngineState.QUARANTINED && now >= r.quarantineUntilMs) {
        r.quarantineUntilMs = 0;
        r.probeDueMs = 0;
        move(r, EngineState.EJECTED, "quarantine_expired", actions);
        readmissionProbe(r, actions);
      }
    }
    return actions;
  }

  /**
   * The probes due at a readmission round (none alone under the whole-wave policy): held engines get an inference
   * probe of what failed; ejected ones, whatever ejected them (an admin, a fault, a reload that added them, a
   * quarantine's end), the checks preflight makes (health, model, contract, a generation, a transfer with a peer).
   * Each is probed when its {@linkplain #backOff backoff} allows.
   */
  public List<BreakerAction> readmissionRound() {
    List<BreakerAction> actions = new ArrayList<>();
    if (fleetHold) return actions;
    long now = clockMs.getAsLong();
    for (EngineRecord r : engines.values()) {
      if ((r.state == EngineState.HELD || r.state == EngineState.EJECTED) && now >= r.probeDueMs) readmissionProbe(r, actions);
    }
    return actions;
  }

  private void readmissionProbe(EngineRecord r, List<BreakerAction> actions) {
    if (r.state == EngineState.HELD) {
      probe(r, ProbeKind.INFERENCE, r.probeProducer, actions);
    } else if (r.state == EngineState.EJECTED) {
      probe(r, ProbeKind.LIFECYCLE, r.probeProducer, actions);
    }
  }

  /** Engines a liveness sweep checks now. */
  public List<String> servingEngines() {
    return engines.values().stream().filter(r -> r.state == EngineState.SERVING).map(r -> r.engine.iid()).toList();
  }

  // Admin commands (docs/operations.md#admin-commands)

  /**
   * An operator's ejection: out of placement now, back by readmission (its checks, from one readmission interval on).
   * Refused when it would leave a role with no serving engine, unless {@code force}.
   */
  public List<BreakerAction> eject(String iid, boolean force) {
    return withRecord(iid, (r, actions) -> {
      refuseDraining("eject", r);
      refuseLastCover("eject", r, force);
      eject(r, "admin", actions);
      r.backoff = 0;
      r.probeDueMs = clockMs.getAsLong() + recovery.readmitIntervalMs();
    });
  }

  /**
   * A drained engine stays out until {@code undrain}: an ejection or quarantine, which end by readmission, would end
   * the operator's maintenance behind their back.
   */
  private static void refuseDraining(String command, EngineRecord r) {
    if (r.state == EngineState.DRAINING) {
      throw new IllegalArgumentException(command + ": " + r.engine.iid() + " is draining and stays out until undrain; "
          + "undrain it first to " + command + " it");
    }
  }

  /** An operator's readmission of an ejected, held or quarantined engine: serving now, without a check. */
  public List<BreakerAction> readmit(String iid) {
    return withRecord(iid, (r, actions) -> {
      if (r.state == EngineState.SERVING) throw new IllegalArgumentException("readmit: " + iid + " is already serving");
      if (r.state == EngineState.DRAINING) {
        throw new IllegalArgumentException("readmit: " + iid + " is draining; undrain it (undrain runs the readmission checks)");
      }
      clearStreaks(r, actions);
      r.quarantineUntilMs = 0;
      move(r, EngineState.SERVING, "admin", actions);
    });
  }

  /**
   * An operator's quarantine of {@code seconds} (0 < seconds ≤ a year); a quarantine already running keeps the later
   * of the two ends. Refused when it would leave a role with no serving engine, unless {@code force}.
   */
  public List<BreakerAction> quarantine(String iid, double seconds, boolean force) {
    if (!(seconds > 0 && seconds <= MAX_QUARANTINE_S)) {
      throw new IllegalArgumentException("quarantine: seconds: " + seconds + " is not valid: expected a number > 0 and <= "
          + (long) MAX_QUARANTINE_S + " (a year)");
    }
    return withRecord(iid, (r, actions) -> {
      refuseDraining("quarantine", r);
      refuseLastCover("quarantine", r, force);
      long until = clockMs.getAsLong() + (long) (seconds * 1000);
      r.quarantineUntilMs = r.state == EngineState.QUARANTINED ? Math.max(r.quarantineUntilMs, until) : until;
      move(r, EngineState.QUARANTINED, "admin", actions);
    });
  }

  /**
   * {@code drain}: no new legs (refused when it would leave a role with no serving engine, unless {@code force}).
   * {@code undrain}: the engine goes through the readmission checks at once (it may have been restarted or have died
   * while drained) and serves again when they pass; refused for an engine that is not draining.
   */
  public List<BreakerAction> drain(String iid, boolean drain, boolean force) {
    return withRecord(iid, (r, actions) -> {
      if (drain) {
        refuseLastCover("drain", r, force);
        move(r, EngineState.DRAINING, "admin", actions);
      } else if (r.state == EngineState.DRAINING) {
        r.probeDueMs = 0;
        move(r, EngineState.EJECTED, "undrain", actions);
        readmissionProbe(r, actions);
      } else {
        throw new IllegalArgumentException("undrain: " + iid + " is not draining (it is " + r.state.wireName() + ")");
      }
    });
  }

  private void refuseLastCover(String command, EngineRecord r, boolean force) {
    if (force || r.state != EngineState.SERVING) return;
    String role = uncoveredRole(r);
    if (role != null) {
      boolean several = engines.values().stream().map(o -> o.engine.model()).distinct().count() > 1;
      String of = several ? " of model " + r.engine.model() : "";
      throw new IllegalArgumentException(command + " " + r.engine.iid() + " refused: it is the last serving engine" + of
          + " that can take the " + role + " phase, so every request" + (several ? " for it" : "") + " would fail; repeat with "
          + "--force to do it anyway");
    }
  }

  /**
   * The whole fleet passed validation together: the fleet hold lifts and every ejected or held engine serves again;
   * drains and quarantines are the operator's and stay.
   */
  public List<BreakerAction> waveRestarted() {
    List<BreakerAction> actions = new ArrayList<>();
    for (EngineRecord r : engines.values()) {
      if (r.state == EngineState.DRAINING || r.state == EngineState.QUARANTINED) continue;
      clearStreaks(r, actions);
      r.probeProducer = null;
      move(r, EngineState.SERVING, "wave_restart", actions);
    }
    if (fleetHold) {
      setFleetHold(false);
      actions.add(new BreakerAction.FleetHold(false));
    }
    return actions;
  }

  // Cluster state (docs/architecture.md#what-lives-in-the-cluster)

  /**
   * Takes over an engine state another replica decided, unless this book holds a newer version. Returns the change it
   * made, for local bookkeeping; nothing of it is to be published again. With the state come its probe schedule (when
   * a held or ejected engine may be probed next, and so its backoff) and, for a readmission, its time, so every replica
   * backs off alike. An engine this replica has just added takes over any state but {@code serving} from before it
   * added it: a serving state that old is a leftover of an earlier engine under the iid, and this replica checks the
   * engine itself first.
   */
  public Optional<BreakerAction.StateChange> applyRemote(EngineStateEvent event) {
    EngineRecord r = engines.get(event.iid());
    if (r == null || !event.version().newerThan(new StateVersion(r.changedMs, r.changedBy))
        || ClockBound.ahead(event.changedMs(), clockMs.getAsLong())) {
      return Optional.empty();
    }
    if (r.changedMs == 0 && event.leftoverFor(r.addedAtMs)) return Optional.empty();
    EngineState from = r.state;
    r.changedMs = event.changedMs();
    r.changedBy = event.origin();
    r.state = event.state();
    r.cause = event.state() == EngineState.SERVING ? null : event.cause();
    // an end further out than any decision can set (a year's quarantine; a probe backoff is far shorter) is no
    // replica's: a forged or broken one would keep the engine out for good
    long until = Math.min(event.untilMs(), ClockBound.plus(event.changedMs(), (long) (MAX_QUARANTINE_S * 1000)));
    r.quarantineUntilMs = event.state() == EngineState.QUARANTINED ? until : 0;
    if (event.producer() != null) r.probeProducer = event.producer();
    boolean out = event.state() == EngineState.HELD || event.state() == EngineState.EJECTED;
    r.probeDueMs = !out ? 0 : until > 0 ? until
        : "admin".equals(event.cause()) ? ClockBound.plus(event.changedMs(), recovery.readmitIntervalMs()) : 0;
    if (out && r.probeDueMs > event.changedMs()) {
      long doublings = (r.probeDueMs - event.changedMs()) / Math.max(1, recovery.readmitIntervalMs());
      r.backoff = Math.min(MAX_BACKOFF, 63 - Long.numberOfLeadingZeros(Math.max(1, doublings)));
    }
    if (event.state() == EngineState.SERVING && (from == EngineState.HELD || from == EngineState.EJECTED)) {
      r.readmittedMs = event.changedMs();
    }
    if (event.state() == EngineState.SERVING && (from == EngineState.HELD || from == EngineState.EJECTED)) r.probeProducer = null;
    return from == event.state() ? Optional.empty()
        : Optional.of(new BreakerAction.StateChange(event.iid(), from, event.state(), event.cause()));
  }

  /** Takes over the fleet hold another replica put or lifted, unless this book's version is newer; true if it changed. */
  public boolean applyFleetHold(FleetHoldEvent event) {
    if (!event.version().newerThan(new StateVersion(fleetHoldChangedMs, fleetHoldBy))
        || ClockBound.ahead(event.changedMs(), clockMs.getAsLong())) {
      return false;
    }
    fleetHoldChangedMs = event.changedMs();
    fleetHoldBy = event.origin();
    boolean changed = fleetHold != event.held();
    fleetHold = event.held();
    return changed;
  }

  /** The fleet hold with its version, as other replicas take it over. */
  public FleetHoldEvent fleetHoldEvent() {
    return new FleetHoldEvent(fleetHold, fleetHoldChangedMs, fleetHoldBy);
  }

  /** Takes over a cluster-wide streak value (another replica counted a failure or reset the class). */
  public void applyStreak(String iid, FailureClass c, int streak) {
    applyStreak(iid, c, streak, false);
  }

  /**
   * Takes over a streak another replica counted; {@code heard}: from its authenticated message, so that a reset (a
   * success it saw) also ends the failures this replica counted itself. A streak read from the shared counter, which
   * any cluster member can write, never lowers those.
   */
  public void applyStreak(String iid, FailureClass c, int streak, boolean heard) {
    EngineRecord r = engines.get(iid);
    if (r == null) return;
    r.streaks.put(c, Math.max(Math.max(0, streak), r.own.get(c)));
    if (heard && streak <= 0) {
      r.own.put(c, 0);
      r.streaks.put(c, 0);
    }
  }

  /** The state of an engine with its version, as other replicas take it over; empty for an unknown engine. */
  public Optional<EngineStateEvent> stateEvent(String iid) {
    EngineRecord r = engines.get(iid);
    return r == null ? Optional.empty() : Optional.of(r.event());
  }

  /** A probe this book asked for is not run here (another replica holds the engine's probe lock). */
  public void probeSkipped(String iid) {
    EngineRecord r = engines.get(iid);
    if (r != null) r.probing = false;
  }

  /**
   * Whether a probe of {@code kind} still has something to decide, checked once the probe lock is taken and the
   * shared state re-read: held and ejected engines, and serving ones whose timeout or overload streak asked for a
   * health probe.
   */
  public boolean needsProbe(String iid, ProbeKind kind) {
    EngineRecord r = engines.get(iid);
    if (r == null) return false;
    return r.state == EngineState.HELD || r.state == EngineState.EJECTED || kind == ProbeKind.HEALTH && r.state == EngineState.SERVING;
  }

  /** When an engine's quarantine ends (epoch ms of the book's clock), or 0 when it is not quarantined. */
  public long quarantineUntil(String iid) {
    EngineRecord r = engines.get(iid);
    return r == null || r.state != EngineState.QUARANTINED ? 0 : r.quarantineUntilMs;
  }

  /** This replica's name, stamped on the states it decides. */
  public String origin() {
    return origin;
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
      setFleetHold(true);
      actions.add(new BreakerAction.FleetHold(true));
    }
  }

  private void probe(EngineRecord r, ProbeKind kind, String producer, List<BreakerAction> actions) {
    if (r.probing) return;
    r.probing = true;
    actions.add(new BreakerAction.Probe(r.engine.iid(), kind, producer,
        kind != ProbeKind.HEALTH && FailureClass.STREAM.wireName().equals(r.cause)));
  }

  private void setFleetHold(boolean held) {
    fleetHold = held;
    fleetHoldChangedMs = ClockBound.next(clockMs.getAsLong(), fleetHoldChangedMs);
    fleetHoldBy = origin;
  }

  /**
   * Moves an engine; a change of state, or a new end of a quarantine, is an action to publish and gets a new version,
   * later than the one it replaces even if another replica's clock ran ahead.
   */
  private void move(EngineRecord r, EngineState to, String cause, List<BreakerAction> actions) {
    EngineState from = r.state;
    boolean requarantined = from == EngineState.QUARANTINED && to == EngineState.QUARANTINED;
    r.state = to;
    r.cause = to == EngineState.SERVING ? null : cause;
    if (from != to || requarantined) {
      r.changedMs = ClockBound.next(clockMs.getAsLong(), r.changedMs);
      r.changedBy = origin;
      actions.add(new BreakerAction.StateChange(r.engine.iid(), from, to, cause));
    }
  }

  private static void clearStreaks(EngineRecord r, List<BreakerAction> actions) {
    for (FailureClass c : FailureClass.values()) r.reset(c, actions);
  }

  /** Whether taking {@code r} out would leave one of its roles with no serving engine. */
  private boolean lastCover(EngineRecord r) {
    return uncoveredRole(r) != null;
  }

  /** The phase ({@code prefill}, {@code decode}) no serving engine of {@code r}'s model would take without {@code r}, or null. */
  private String uncoveredRole(EngineRecord r) {
    for (Phase phase : Phase.values()) {
      boolean covers = phase == Phase.PREFILL ? r.engine.role().canPrefill() : r.engine.role().canDecode();
      if (!covers) continue;
      boolean other = engines.values().stream().anyMatch(o -> o != r && o.state == EngineState.SERVING
          && o.engine.model().equals(r.engine.model())
          && (phase == Phase.PREFILL ? o.engine.role().canPrefill() : o.engine.role().canDecode()));
      if (!other) return phase.wireName();
    }
    return null;
  }

  /** Whether the fleet hold is off and lifting it needs no wave restart (policy {@code individual}, no hold). */
  public boolean nothingToRestart() {
    return !fleetHold && !recovery.wholeWave();
  }
}
