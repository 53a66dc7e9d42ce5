package narwhal.breaker;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.StateVersion;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.RecoveryConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The breaker state machine with an injected clock: every class, verdict, reset, protection and probe outcome. */
class BreakerBookTest {
  private final AtomicLong now = new AtomicLong(10_000);

  private static EngineConfig engine(String iid, Role role) {
    return new EngineConfig(iid, "http://127.0.0.1:9/" + iid, role, "", "");
  }

  private static final List<EngineConfig> FLEET = List.of(engine("P0", Role.PREFILL), engine("P1", Role.PREFILL),
      engine("D0", Role.DECODE), engine("D1", Role.DECODE));

  private static RecoveryConfig recovery(String extra) {
    return narwhal.common.config.NarwhalConfig.fromJson(new JsonObject().put("model", "m")
        .put("engines", new io.vertx.core.json.JsonArray().add(new JsonObject().put("iid", "x").put("url", "http://h:1")))
        .put("recovery", new JsonObject(extra))).recovery();
  }

  private BreakerBook book(String recoveryJson) {
    return new BreakerBook(FLEET, recovery(recoveryJson), false, now::get);
  }

  private static LegOutcome failure(String iid, Phase phase, FailureClass c) {
    return new LegOutcome(iid, phase, false, c, c.wireName(), null, true);
  }

  private static List<BreakerAction> times(int n, java.util.function.Supplier<List<BreakerAction>> step) {
    List<BreakerAction> last = List.of();
    for (int i = 0; i < n; i++) last = step.get();
    return last;
  }

  @Test
  void streakChangesAreActionsOfTheStepThatMadeThem() {
    BreakerBook b = book("{\"eject_after\": 3}");
    assertEquals(List.of(new BreakerAction.StreakChanged("D0", FailureClass.TIMEOUT, 1)),
        b.record(failure("D0", Phase.DECODE, FailureClass.TIMEOUT)));
    assertEquals(List.of(new BreakerAction.StreakChanged("D0", FailureClass.TIMEOUT, 5)),
        b.record(failure("D0", Phase.DECODE, FailureClass.TIMEOUT), 5).subList(0, 1), "the cluster-wide count is taken over");
    List<BreakerAction> success = b.record(new LegOutcome("D0", Phase.DECODE, true, null, null, null, false));
    assertEquals(List.of(new BreakerAction.StreakChanged("D0", FailureClass.TIMEOUT, 0)), success, "only the streak that was not zero");
    assertTrue(b.record(new LegOutcome("D0", Phase.DECODE, true, null, null, null, false)).isEmpty(), "nothing changed, nothing to publish");
    b.applyStreak("D1", FailureClass.STREAM, 2);
    assertEquals(2, b.streak("D1", FailureClass.STREAM), "a streak another replica counted is taken over without an action");
  }

  @Test
  void connectionStreakEjectsAtThreshold() {
    BreakerBook b = book("{\"eject_after\": 3}");
    assertTrue(times(2, () -> decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION)))).isEmpty());
    assertEquals(2, b.streak("D0", FailureClass.CONNECTION));
    List<BreakerAction> actions = decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION)));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.EJECTED, "connection")), actions);
  }

  @Test
  void connectionEjectionMayTakeTheLastEngineOfARole() {
    BreakerBook b = book("{\"eject_after\": 1}");
    decided(b.eject("D1", true));
    List<BreakerAction> actions = decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION)));
    assertEquals(EngineState.EJECTED, b.state("D0").orElseThrow(), String.valueOf(actions));
  }

  @Test
  void successOfTheProvingKindResetsItsClass() {
    BreakerBook b = book("{\"eject_after\": 3}");
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)));
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)));
    decided(b.record(LegOutcome.success("D0", Phase.PREFILL)));
    assertEquals(2, b.streak("D0", FailureClass.STREAM), "a prefill success proves nothing about streams");
    decided(b.record(LegOutcome.success("D0", Phase.DECODE)));
    assertEquals(0, b.streak("D0", FailureClass.STREAM), "a completed decode resets stream");

    decided(b.record(failure("P0", Phase.PREFILL, FailureClass.KV_HANDOFF)));
    decided(b.record(LegOutcome.success("P0", Phase.PREFILL)));
    assertEquals(0, b.streak("P0", FailureClass.KV_HANDOFF), "a valid handoff resets kv_handoff");

    decided(b.record(failure("P1", Phase.PREFILL, FailureClass.CONNECTION)));
    decided(b.record(new LegOutcome("P1", Phase.PREFILL, false, null, "engine_rejected", null, false)));
    assertEquals(0, b.streak("P1", FailureClass.CONNECTION), "a 4xx answer resets connection");
  }

  @Test
  void streamFailuresHoldUntilAnInferenceProbePasses() {
    BreakerBook b = book("{\"eject_after\": 3}");
    decided(b.record(new LegOutcome("D0", Phase.DECODE, false, FailureClass.STREAM, "decode_read_timeout", "P1", true)));
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)));
    List<BreakerAction> actions = decided(b.record(new LegOutcome("D0", Phase.DECODE, false, FailureClass.STREAM, "first_token_timeout", "P1", true)));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.HELD, "stream")), actions,
        "held, and probed at the readmission cadence, not at once");
    assertTrue(decided(b.readmissionRound()).isEmpty(), "not before one readmission interval");
    now.addAndGet(10_000);
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, "P1", true)), decided(b.readmissionRound()),
        "a streamed probe, whose handoff comes from the original producer");
    assertTrue(decided(b.readmissionRound()).isEmpty(), "one probe per engine at a time");
    assertTrue(decided(b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.INCONCLUSIVE)).isEmpty());
    assertEquals(EngineState.HELD, b.state("D0").orElseThrow(), "inconclusive keeps it held");
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, "P1", true)), decided(b.readmissionRound()),
        "probed again at the next round");
    List<BreakerAction> passed = decided(b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.PASSED));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.HELD, EngineState.SERVING, "inference_probe")), passed);
    assertEquals(0, b.streak("D0", FailureClass.STREAM));
  }

  @Test
  void failedInferenceProbeEjectsAndEjectedStreamEnginesNeedTheFullChecksWithAStream() {
    BreakerBook b = book("{\"eject_after\": 1}");
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)));
    List<BreakerAction> failed = decided(b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.FAILED));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.HELD, EngineState.EJECTED, "stream")), failed);
    assertTrue(decided(b.readmissionRound()).isEmpty(), "a failed probe waits one readmission interval");
    now.addAndGet(10_000);
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.LIFECYCLE, null, true)), decided(b.readmissionRound()),
        "a health check is not enough for an engine ejected for stream failures");
  }

  @Test
  void aFaultRecurringRightAfterReadmissionDoublesTheHold() {
    BreakerBook b = book("{\"eject_after\": 1}");
    long[] waits = new long[4];
    for (int round = 0; round < waits.length; round++) {
      decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)));
      assertEquals(EngineState.HELD, b.state("D0").orElseThrow());
      long heldAt = now.get();
      while (decided(b.readmissionRound()).isEmpty()) now.addAndGet(1_000);
      waits[round] = now.get() - heldAt;
      decided(b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.PASSED));
      assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
      now.addAndGet(1_000);
    }
    assertArrayEquals(new long[] {10_000, 20_000, 40_000, 80_000}, waits, "each recurrence right after readmission doubles the wait");
    now.addAndGet(60_000);
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)));
    long heldAt = now.get();
    while (decided(b.readmissionRound()).isEmpty()) now.addAndGet(1_000);
    assertEquals(10_000, now.get() - heldAt, "a fault long after readmission starts over");
  }

  @Test
  void holdsNeverTakeTheLastEngineOfARole() {
    BreakerBook b = book("{\"eject_after\": 1}");
    decided(b.eject("D1", true));
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM))).isEmpty());
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.KV_HANDOFF))).isEmpty());
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.INFERENCE_STATUS))).isEmpty());
  }

  @Test
  void timeoutAndOverloadAskForAHealthProbe() {
    for (FailureClass c : List.of(FailureClass.TIMEOUT, FailureClass.OVERLOAD)) {
      BreakerBook b = book("{\"eject_after\": 2}");
      decided(b.record(failure("P0", Phase.PREFILL, c)));
      List<BreakerAction> actions = decided(b.record(failure("P0", Phase.PREFILL, c)));
      assertEquals(List.of(new BreakerAction.Probe("P0", ProbeKind.HEALTH, null)), actions, c.name());
      assertEquals(EngineState.SERVING, b.state("P0").orElseThrow());
      assertTrue(decided(b.probeResult("P0", ProbeKind.HEALTH, ProbeOutcome.PASSED)).isEmpty());
      assertEquals(0, b.streak("P0", c), "a passed health probe clears the streak");
      decided(b.record(failure("P0", Phase.PREFILL, c)));
      decided(b.record(failure("P0", Phase.PREFILL, c)));
      assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.SERVING, EngineState.EJECTED, c.wireName())),
          decided(b.probeResult("P0", ProbeKind.HEALTH, ProbeOutcome.FAILED)));
    }
  }

  @Test
  void quarantineLastsItsTimeOnTheInjectedClockAndSparesTheLastEngine() {
    BreakerBook b = book("{\"eject_after\": 5, \"failure_quarantine_s\": 30}");
    List<BreakerAction> actions = decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION)));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.QUARANTINED, "quarantine")), actions);
    assertTrue(decided(b.record(failure("D1", Phase.DECODE, FailureClass.CONNECTION))).isEmpty(), "D1 is the last decode engine");
    now.addAndGet(29_999);
    assertTrue(decided(b.tick()).isEmpty());
    now.addAndGet(1);
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.QUARANTINED, EngineState.EJECTED, "quarantine_expired"),
        new BreakerAction.Probe("D0", ProbeKind.LIFECYCLE, null)), decided(b.tick()), "its end goes through the readmission checks at once");
    decided(b.probeResult("D0", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED));
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    assertTrue(decided(b.record(new LegOutcome("D1", Phase.DECODE, false, FailureClass.CONNECTION, "connect_error", null, false))).isEmpty(),
        "faults that do not quarantine do not");
  }

  @Test
  void noQuarantineWhenDisabled() {
    BreakerBook b = book("{\"eject_after\": 5}");
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION))).isEmpty());
  }

  @Test
  void livenessMissesEject() {
    BreakerBook b = book("{\"liveness_misses\": 2}");
    assertTrue(decided(b.liveness("P0", false)).isEmpty());
    assertTrue(decided(b.liveness("P0", true)).isEmpty(), "a healthy answer resets the misses");
    decided(b.liveness("P0", false));
    assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.SERVING, EngineState.EJECTED, "liveness")), decided(b.liveness("P0", false)));
    assertEquals(List.of("P1", "D0", "D1"), b.servingEngines());
  }

  @Test
  void ejectedEnginesGetThePreflightChecksAtReadmissionWithOrWithoutAContract() {
    BreakerBook dev = book("{}");
    dev.liveness("P0", false);
    dev.liveness("P0", false);
    assertEquals(List.of(new BreakerAction.Probe("P0", ProbeKind.LIFECYCLE, null)), dev.readmissionRound());
    assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.EJECTED, EngineState.SERVING, "lifecycle_probe")),
        dev.probeResult("P0", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED));

    BreakerBook pinned = new BreakerBook(FLEET, recovery("{}"), true, now::get);
    pinned.liveness("P0", false);
    pinned.liveness("P0", false);
    assertEquals(List.of(new BreakerAction.Probe("P0", ProbeKind.LIFECYCLE, null)), pinned.readmissionRound());
  }

  @Test
  void adminEjectionsComeBackByReadmissionFromOneIntervalOnOrByReadmit() {
    BreakerBook b = book("{}");
    decided(b.eject("D0", false));
    assertTrue(decided(b.readmissionRound()).isEmpty(), "out for at least one readmission interval");
    now.addAndGet(10_000);
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.LIFECYCLE, null)), decided(b.readmissionRound()));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.EJECTED, EngineState.SERVING, "lifecycle_probe")),
        decided(b.probeResult("D0", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED)));
    decided(b.eject("D0", false));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.EJECTED, EngineState.SERVING, "admin")), decided(b.readmit("D0")));
  }

  @Test
  void aDrainedEngineIsNeitherEjectedNorQuarantinedBehindTheDrainsBack() {
    BreakerBook b = book("{}");
    decided(b.drain("D1", true, false));
    IllegalArgumentException eject = assertThrows(IllegalArgumentException.class, () -> b.eject("D1", true));
    assertEquals("eject: D1 is draining and stays out until undrain; undrain it first to eject it", eject.getMessage());
    IllegalArgumentException quarantine = assertThrows(IllegalArgumentException.class, () -> b.quarantine("D1", 2, true));
    assertEquals("quarantine: D1 is draining and stays out until undrain; undrain it first to quarantine it",
        quarantine.getMessage());
    now.addAndGet(60_000);
    decided(b.tick());
    decided(b.readmissionRound());
    assertEquals(EngineState.DRAINING, b.state("D1").orElseThrow(), "the drain holds");
  }

  @Test
  void undrainGoesThroughTheReadmissionChecksAndOnlyForADrainingEngine() {
    BreakerBook b = book("{}");
    decided(b.drain("D1", true, false));
    assertEquals(EngineState.DRAINING, b.state("D1").orElseThrow());
    assertEquals(List.of(new BreakerAction.StateChange("D1", EngineState.DRAINING, EngineState.EJECTED, "undrain"),
        new BreakerAction.Probe("D1", ProbeKind.LIFECYCLE, null)), decided(b.drain("D1", false, false)));
    assertEquals(List.of(new BreakerAction.StateChange("D1", EngineState.EJECTED, EngineState.SERVING, "lifecycle_probe")),
        decided(b.probeResult("D1", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED)));
    IllegalArgumentException notDraining = assertThrows(IllegalArgumentException.class, () -> b.drain("D1", false, false));
    assertEquals("undrain: D1 is not draining (it is serving)", notDraining.getMessage());
  }

  @Test
  void adminCommandsRefuseToTakeTheLastEngineOfARoleUnlessForced() {
    BreakerBook b = book("{}");
    decided(b.eject("D0", false));
    for (String command : List.of("eject", "quarantine", "drain")) {
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> {
        switch (command) {
          case "eject" -> b.eject("D1", false);
          case "quarantine" -> b.quarantine("D1", 30, false);
          default -> b.drain("D1", true, false);
        }
      });
      assertEquals(command + " D1 refused: it is the last serving engine that can take the decode phase, so every request would fail;"
          + " repeat with --force to do it anyway", refused.getMessage());
      assertEquals(EngineState.SERVING, b.state("D1").orElseThrow(), command + " changed nothing");
    }
    decided(b.quarantine("D1", 30, true));
    assertEquals(EngineState.QUARANTINED, b.state("D1").orElseThrow(), "--force does it");
  }

  @Test
  void quarantinesKeepTheLaterEndAndRefuseEndsBeyondAYear() {
    BreakerBook b = book("{}");
    decided(b.quarantine("P0", 600, false));
    long longEnd = b.quarantineUntil("P0");
    decided(b.quarantine("P0", 5, false));
    assertEquals(longEnd, b.quarantineUntil("P0"), "a shorter quarantine does not cut a longer one short");
    assertThrows(IllegalArgumentException.class, () -> b.quarantine("P1", 1e18, false));
    assertThrows(IllegalArgumentException.class, () -> b.quarantine("P1", 0, false));
    assertEquals(EngineState.SERVING, b.state("P1").orElseThrow());
  }

  @Test
  void anEngineAddedByReloadIsAGuessThatAnyClusterStateOfItOverrules() {
    BreakerBook b = book("{}");
    List<EngineConfig> more = new java.util.ArrayList<>(FLEET);
    more.add(engine("D2", Role.DECODE));
    decided(b.reconfigure(more, recovery("{}"), false));
    assertEquals(EngineState.EJECTED, b.state("D2").orElseThrow());
    assertEquals(new StateVersion(0, ""), b.stateEvent("D2").orElseThrow().version(), "no version: not a decision");
    EngineStateEvent drained = new EngineStateEvent("D2", EngineState.DRAINING, "admin", 0, null, 5, "breaker-other");
    assertTrue(b.applyRemote(drained).isPresent());
    assertEquals(EngineState.DRAINING, b.state("D2").orElseThrow(), "even an old drain by another replica wins");
  }

  @Test
  void anEndFurtherOutThanAnyDecisionCanSetIsBoundedToAYear() {
    BreakerBook b = book("{}");
    long year = (long) (BreakerBook.MAX_QUARANTINE_S * 1000);
    assertTrue(b.applyRemote(new EngineStateEvent("D0", EngineState.QUARANTINED, "admin", Long.MAX_VALUE, null, now.get(), "breaker-other"))
        .isPresent());
    assertEquals(now.get() + year, b.quarantineUntil("D0"), "a quarantine ends within a year of its decision, whatever the event says");
    assertTrue(b.applyRemote(new EngineStateEvent("D1", EngineState.EJECTED, "admin", Long.MAX_VALUE, null, now.get(), "breaker-other"))
        .isPresent());
    assertTrue(b.readmissionRound().stream().noneMatch(a -> a instanceof BreakerAction.Probe p && p.iid().equals("D1")));
    now.addAndGet(year + 1);
    assertTrue(b.readmissionRound().stream().anyMatch(a -> a instanceof BreakerAction.Probe p && p.iid().equals("D1")),
        "D1 is probed again after a year at most, not left out for good");
  }

  @Test
  void aVersionFurtherAheadThanTheClockSkewIsRefusedAndNoVersionWraps() {
    BreakerBook b = book("{}");
    long tooFar = now.get() + narwhal.common.bus.ClockBound.MAX_SKEW_MS + 1;
    assertTrue(b.applyRemote(new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, Long.MAX_VALUE, "breaker-forged")).isEmpty());
    assertTrue(b.applyRemote(new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, tooFar, "breaker-forged")).isEmpty());
    assertTrue(!b.applyFleetHold(new narwhal.common.bus.FleetHoldEvent(true, Long.MAX_VALUE, "breaker-forged")));
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    EngineStateEvent withinSkew = new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, tooFar - 1, "breaker-ahead");
    assertTrue(b.applyRemote(withinSkew).isPresent(), "a replica whose clock runs ahead within the skew is followed");
    decided(b.readmit("D0"));
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    assertTrue(b.stateEvent("D0").orElseThrow().version().newerThan(withinSkew.version()), "the readmission's version is later");
    assertEquals(Long.MAX_VALUE, narwhal.common.bus.ClockBound.next(now.get(), Long.MAX_VALUE), "saturates, never wraps");
  }

  @Test
  void anEngineAnsweringThatItLacksTheModelIsEjectedAtOnce() {
    BreakerBook b = book("{\"eject_after\": 3}");
    assertEquals(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.EJECTED, "model"),
        decided(b.record(failure("D0", Phase.DECODE, FailureClass.MODEL))).get(0));
  }

  @Test
  void wholeWaveHoldsTheFleetUntilAWaveRestart() {
    BreakerBook b = new BreakerBook(FLEET, recovery("{\"eject_after\": 1}"), true, now::get);
    decided(b.reconfigure(FLEET, new RecoveryConfig(1, 1.0, 10, 10, 2, 0, narwhal.common.config.RestartPolicy.WHOLE_WAVE), true));
    List<BreakerAction> actions = decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION)));
    assertTrue(actions.contains(new BreakerAction.FleetHold(true)), String.valueOf(actions));
    assertTrue(b.fleetHold());
    assertTrue(decided(b.readmissionRound()).isEmpty(), "no engine is readmitted alone");
    assertTrue(decided(b.probeResult("D0", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED)).isEmpty());
    assertEquals(EngineState.EJECTED, b.state("D0").orElseThrow());
    List<BreakerAction> restart = decided(b.waveRestarted());
    assertTrue(restart.contains(new BreakerAction.FleetHold(false)));
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    assertFalse(b.fleetHold());
  }

  // Cluster state (docs/architecture.md#what-lives-in-the-cluster): what another replica decided, taken over by this book

  private BreakerBook replica(String origin, String recoveryJson) {
    return new BreakerBook(FLEET, recovery(recoveryJson), false, now::get, origin);
  }

  @Test
  void aSharedCounterResetByAnotherMemberNeverLowersTheFailuresThisReplicaSawItself() {
    BreakerBook b = replica("a", "{\"eject_after\": 3, \"liveness_misses\": 2}");
    // the shared counter is reset before each failure, by a member without the secret: it always answers 1
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION), 1)).isEmpty());
    b.applyStreak("D0", FailureClass.CONNECTION, 0);
    assertEquals(1, b.streak("D0", FailureClass.CONNECTION), "a counter read as 0 does not undo a failure seen here");
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION), 1)).isEmpty());
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.EJECTED, "connection")),
        decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION), 1)), "its third failure seen here ejects");
    assertTrue(decided(b.liveness("P0", false, 1)).isEmpty());
    assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.SERVING, EngineState.EJECTED, "liveness")),
        decided(b.liveness("P0", false, 1)), "so does its second liveness miss");

    BreakerBook c = replica("c", "{\"eject_after\": 3}");
    c.record(failure("D1", Phase.DECODE, FailureClass.CONNECTION), 1);
    c.record(failure("D1", Phase.DECODE, FailureClass.CONNECTION), 2);
    c.applyStreak("D1", FailureClass.CONNECTION, 0, true);
    assertTrue(decided(c.record(failure("D1", Phase.DECODE, FailureClass.CONNECTION), 1)).isEmpty(),
        "a success another replica saw (its authenticated reset) ends the streak");
  }

  @Test
  void aFailureCountsAtTheClusterWideStreakTheCallerCounted() {
    BreakerBook b = replica("a", "{\"eject_after\": 3}");
    assertTrue(decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION), 2)).isEmpty());
    assertEquals(2, b.streak("D0", FailureClass.CONNECTION), "two failures cluster-wide, one of them seen here");
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.EJECTED, "connection")),
        decided(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION), 3)), "the verdict comes at the cluster-wide threshold");
    BreakerBook c = replica("c", "{\"liveness_misses\": 2}");
    assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.SERVING, EngineState.EJECTED, "liveness")),
        decided(c.liveness("P0", false, 2)), "a second miss counted by another replica ejects");
  }

  @Test
  void applyStreakTakesOverAnotherReplicasCountWithoutAVerdict() {
    BreakerBook b = replica("b", "{\"eject_after\": 3}");
    b.applyStreak("D0", FailureClass.STREAM, 5);
    assertEquals(5, b.streak("D0", FailureClass.STREAM));
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow(), "the replica that counted decides the verdict");
    decided(b.record(LegOutcome.success("D0", Phase.DECODE)));
    assertEquals(0, b.streak("D0", FailureClass.STREAM), "a success seen here resets the shared streak");
    b.applyStreak("nope", FailureClass.STREAM, 1);
  }

  @Test
  void aRemoteStateIsTakenOverWithItsCauseQuarantineEndAndProducer() {
    BreakerBook a = replica("a", "{}");
    BreakerBook b = replica("b", "{}");
    decided(a.quarantine("D0", 30, true));
    EngineStateEvent event = a.stateEvent("D0").orElseThrow();
    assertEquals(now.get() + 30_000, event.untilMs());
    EngineStateEvent wire = EngineStateEvent.fromJson(new JsonObject(event.toJson().encode()));
    assertEquals(event, wire, "the event survives the bus and the shared map");
    assertEquals(java.util.Optional.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.QUARANTINED, "admin")),
        b.applyRemote(wire));
    assertEquals(a.quarantineUntil("D0"), b.quarantineUntil("D0"), "the end travels with the state");
    assertTrue(b.applyRemote(wire).isEmpty(), "the same version again changes nothing");

    now.addAndGet(29_999);
    assertTrue(decided(a.tick()).isEmpty());
    assertTrue(decided(b.tick()).isEmpty());
    now.addAndGet(1);
    assertEquals(EngineState.EJECTED, ((BreakerAction.StateChange) decided(a.tick()).get(0)).to());
    assertEquals(EngineState.EJECTED, ((BreakerAction.StateChange) decided(b.tick()).get(0)).to(), "both replicas end it at the same instant");
    decided(a.probeResult("D0", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED));
    b.applyRemote(a.stateEvent("D0").orElseThrow());
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow(), "the replica whose checks passed readmits it for both");

    decided(a.record(new LegOutcome("D1", Phase.DECODE, false, FailureClass.STREAM, "first_token_timeout", "P1", true), 3));
    EngineStateEvent held = a.stateEvent("D1").orElseThrow();
    assertEquals(EngineState.HELD, held.state());
    assertEquals("P1", held.producer());
    b.applyRemote(held);
    assertEquals(EngineState.HELD, b.state("D1").orElseThrow());
    assertTrue(decided(b.readmissionRound()).isEmpty(), "not before the probe time the holding replica set");
    now.addAndGet(10_000);
    assertEquals(List.of(new BreakerAction.Probe("D1", ProbeKind.INFERENCE, "P1", true)), decided(b.readmissionRound()),
        "another replica probes a held engine with the original producer");
  }

  @Test
  void theNewestVersionWinsWhateverTheOrderOfArrival() {
    BreakerBook a = replica("a", "{}");
    BreakerBook b = replica("b", "{}");
    BreakerBook c = replica("c", "{}");
    decided(a.eject("D0", true));
    EngineStateEvent ejected = a.stateEvent("D0").orElseThrow();
    b.applyRemote(ejected);
    now.addAndGet(5);
    decided(b.readmit("D0"));
    EngineStateEvent readmitted = b.stateEvent("D0").orElseThrow();
    assertTrue(readmitted.version().newerThan(ejected.version()));

    c.applyRemote(readmitted);
    assertTrue(c.applyRemote(ejected).isEmpty(), "an older version arriving late is ignored");
    assertEquals(EngineState.SERVING, c.state("D0").orElseThrow());
    a.applyRemote(readmitted);
    assertEquals(EngineState.SERVING, a.state("D0").orElseThrow());

    b.applyRemote(new EngineStateEvent("D0", EngineState.DRAINING, "admin", 0, null, readmitted.changedMs() + 1_000, "z"));
    now.set(readmitted.changedMs());
    decided(b.drain("D0", false, true));
    assertTrue(b.stateEvent("D0").orElseThrow().changedMs() > readmitted.changedMs() + 1_000,
        "a replica whose clock is behind still stamps its change later than the one it replaces");
  }

  @Test
  void equalVersionsFromTwoReplicasResolveTheSameWayEverywhere() {
    EngineStateEvent fromA = new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, 5_000, "a");
    EngineStateEvent fromB = new EngineStateEvent("D0", EngineState.DRAINING, "admin", 0, null, 5_000, "b");
    BreakerBook x = replica("x", "{}");
    BreakerBook y = replica("y", "{}");
    x.applyRemote(fromA);
    x.applyRemote(fromB);
    y.applyRemote(fromB);
    y.applyRemote(fromA);
    assertEquals(EngineState.DRAINING, x.state("D0").orElseThrow());
    assertEquals(EngineState.DRAINING, y.state("D0").orElseThrow());
  }

  @Test
  void theFleetHoldTravelsWithItsVersion() {
    BreakerBook b = replica("b", "{}");
    assertTrue(b.applyFleetHold(new FleetHoldEvent(true, 2_000, "a")));
    assertTrue(b.fleetHold());
    assertTrue(decided(b.readmissionRound()).isEmpty(), "no engine is readmitted alone while another replica holds the fleet");
    assertFalse(b.applyFleetHold(new FleetHoldEvent(false, 1_000, "c")), "an older lift is ignored");
    assertTrue(b.fleetHold());
    assertTrue(b.applyFleetHold(new FleetHoldEvent(false, 3_000, "a")));
    assertFalse(b.fleetHold());
  }

  @Test
  void aProbeSkippedForAnotherReplicasLockIsAskedForAgainAndOnlyWhileItIsNeeded() {
    BreakerBook b = replica("b", "{\"eject_after\": 1}");
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM), 1));
    now.addAndGet(10_000);
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, null, true)), decided(b.readmissionRound()));
    assertTrue(decided(b.readmissionRound()).isEmpty(), "the probe is in flight");
    b.probeSkipped("D0");
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, null, true)), decided(b.readmissionRound()),
        "skipped: asked for again at the next round");
    assertTrue(b.needsProbe("D0", ProbeKind.INFERENCE));
    b.applyRemote(new EngineStateEvent("D0", EngineState.SERVING, "inference_probe", 0, null, now.get() + 1, "a"));
    assertFalse(b.needsProbe("D0", ProbeKind.INFERENCE), "another replica's probe readmitted it meanwhile");
    assertTrue(b.needsProbe("D0", ProbeKind.HEALTH), "a serving engine may still owe a timeout health probe");
    assertFalse(b.needsProbe("nope", ProbeKind.HEALTH));
  }

  @Test
  void aRemoteReadmissionIsNotCountedAsAnEventToPublishAndUnknownEnginesAreIgnored() {
    BreakerBook b = replica("b", "{}");
    assertTrue(b.applyRemote(new EngineStateEvent("X9", EngineState.EJECTED, "admin", 0, null, 1, "a")).isEmpty());
    assertTrue(EngineStateEvent.fromJson(new JsonObject().put("iid", "D0").put("state", "ejected")) == null,
        "an unversioned event is not a breaker's state");
    assertTrue(EngineStateEvent.fromJson(new JsonObject().put("fleet_hold", true)) == null);
  }

  @Test
  void replicasBackOffAlikeWhicheverOfThemHoldsOrReadmits() {
    BreakerBook a = replica("a", "{\"eject_after\": 1}");
    BreakerBook b = replica("b", "{\"eject_after\": 1}");
    decided(a.record(failure("D0", Phase.DECODE, FailureClass.STREAM), 1));
    b.applyRemote(a.stateEvent("D0").orElseThrow());
    assertTrue(decided(b.readmissionRound()).isEmpty(), "b waits for the probe time a set, not its own next round");
    now.addAndGet(10_000);
    assertEquals(1, decided(a.readmissionRound()).size());
    decided(a.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.PASSED));
    b.applyRemote(a.stateEvent("D0").orElseThrow());
    now.addAndGet(1_000);
    decided(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM), 1));
    assertEquals(EngineState.HELD, b.state("D0").orElseThrow());
    EngineStateEvent held = b.stateEvent("D0").orElseThrow();
    assertEquals(now.get() + 20_000, held.untilMs(), "b knows a readmitted it a second ago: the wait doubles");
    a.applyRemote(held);
    now.addAndGet(10_000);
    assertTrue(decided(a.readmissionRound()).isEmpty(), "a keeps to b's schedule");
    now.addAndGet(10_000);
    assertEquals(1, decided(a.readmissionRound()).size());
  }

  @Test
  void aServingStateFromBeforeAnEngineWasAddedIsALeftoverNotACheck() {
    BreakerBook b = book("{}");
    List<EngineConfig> more = new java.util.ArrayList<>(FLEET);
    more.add(engine("D2", Role.DECODE));
    EngineStateEvent leftover = new EngineStateEvent("D2", EngineState.SERVING, null, 0, null, now.get() - 60_000, "breaker-gone");
    assertTrue(decided(b.reconfigure(more, recovery("{}"), false)).contains(new BreakerAction.Probe("D2", ProbeKind.LIFECYCLE, null)),
        "an added engine is checked at once");
    assertTrue(b.applyRemote(leftover).isEmpty());
    assertEquals(EngineState.EJECTED, b.state("D2").orElseThrow(), "an engine removed and added again is checked again");
    assertEquals(List.of(), decided(b.readmissionRound()), "its check is under way");
    EngineStateEvent checkedElsewhere = new EngineStateEvent("D2", EngineState.SERVING, null, 0, null, now.get() + 1, "breaker-c");
    assertTrue(b.applyRemote(checkedElsewhere).isPresent(), "a replica's check after the add counts");
  }

  /** The decisions among a step's actions: what the existing cases check (streak changes are checked on their own). */
  private static List<BreakerAction> decided(List<BreakerAction> actions) {
    return actions.stream().filter(a -> !(a instanceof BreakerAction.StreakChanged)).toList();
  }
}
