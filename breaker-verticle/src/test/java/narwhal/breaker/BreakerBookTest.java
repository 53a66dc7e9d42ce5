package narwhal.breaker;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.LegOutcome;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.RecoveryConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
  void connectionStreakEjectsAtThreshold() {
    BreakerBook b = book("{\"eject_after\": 3}");
    assertTrue(times(2, () -> b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION))).isEmpty());
    assertEquals(2, b.streak("D0", FailureClass.CONNECTION));
    List<BreakerAction> actions = b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.EJECTED, "connection")), actions);
  }

  @Test
  void connectionEjectionMayTakeTheLastEngineOfARole() {
    BreakerBook b = book("{\"eject_after\": 1}");
    b.eject("D1");
    List<BreakerAction> actions = b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION));
    assertEquals(EngineState.EJECTED, b.state("D0").orElseThrow(), String.valueOf(actions));
  }

  @Test
  void successOfTheProvingKindResetsItsClass() {
    BreakerBook b = book("{\"eject_after\": 3}");
    b.record(failure("D0", Phase.DECODE, FailureClass.STREAM));
    b.record(failure("D0", Phase.DECODE, FailureClass.STREAM));
    b.record(LegOutcome.success("D0", Phase.PREFILL));
    assertEquals(2, b.streak("D0", FailureClass.STREAM), "a prefill success proves nothing about streams");
    b.record(LegOutcome.success("D0", Phase.DECODE));
    assertEquals(0, b.streak("D0", FailureClass.STREAM), "a completed decode resets stream");

    b.record(failure("P0", Phase.PREFILL, FailureClass.KV_HANDOFF));
    b.record(LegOutcome.success("P0", Phase.PREFILL));
    assertEquals(0, b.streak("P0", FailureClass.KV_HANDOFF), "a valid handoff resets kv_handoff");

    b.record(failure("P1", Phase.PREFILL, FailureClass.CONNECTION));
    b.record(new LegOutcome("P1", Phase.PREFILL, false, null, "engine_rejected", null, false));
    assertEquals(0, b.streak("P1", FailureClass.CONNECTION), "a 4xx answer resets connection");
  }

  @Test
  void streamFailuresHoldUntilAnInferenceProbePasses() {
    BreakerBook b = book("{\"eject_after\": 3}");
    b.record(new LegOutcome("D0", Phase.DECODE, false, FailureClass.STREAM, "decode_read_timeout", "P1", true));
    b.record(failure("D0", Phase.DECODE, FailureClass.STREAM));
    List<BreakerAction> actions = b.record(new LegOutcome("D0", Phase.DECODE, false, FailureClass.STREAM, "first_token_timeout", "P1", true));
    assertEquals(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.HELD, "stream"), actions.get(0));
    assertEquals(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, "P1"), actions.get(1), "the probe's handoff comes from the original producer");

    assertTrue(b.readmissionRound().isEmpty(), "one probe per engine at a time");
    assertTrue(b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.INCONCLUSIVE).isEmpty());
    assertEquals(EngineState.HELD, b.state("D0").orElseThrow(), "inconclusive keeps it held");
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, "P1")), b.readmissionRound(),
        "probed again at the normal cadence");
    List<BreakerAction> passed = b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.PASSED);
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.HELD, EngineState.SERVING, "inference_probe")), passed);
    assertEquals(0, b.streak("D0", FailureClass.STREAM));
  }

  @Test
  void failedInferenceProbeEjectsAndEjectedStreamEnginesNeedAnotherInferenceProbe() {
    BreakerBook b = book("{\"eject_after\": 1}");
    b.record(failure("D0", Phase.DECODE, FailureClass.STREAM));
    List<BreakerAction> failed = b.probeResult("D0", ProbeKind.INFERENCE, ProbeOutcome.FAILED);
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.HELD, EngineState.EJECTED, "stream")), failed);
    assertEquals(List.of(new BreakerAction.Probe("D0", ProbeKind.INFERENCE, null)), b.readmissionRound(),
        "a health check is not enough for an engine ejected for stream failures");
  }

  @Test
  void holdsNeverTakeTheLastEngineOfARole() {
    BreakerBook b = book("{\"eject_after\": 1}");
    b.eject("D1");
    assertTrue(b.record(failure("D0", Phase.DECODE, FailureClass.STREAM)).isEmpty());
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    assertTrue(b.record(failure("D0", Phase.DECODE, FailureClass.KV_HANDOFF)).isEmpty());
    assertTrue(b.record(failure("D0", Phase.DECODE, FailureClass.INFERENCE_STATUS)).isEmpty());
  }

  @Test
  void timeoutAndOverloadAskForAHealthProbe() {
    for (FailureClass c : List.of(FailureClass.TIMEOUT, FailureClass.OVERLOAD)) {
      BreakerBook b = book("{\"eject_after\": 2}");
      b.record(failure("P0", Phase.PREFILL, c));
      List<BreakerAction> actions = b.record(failure("P0", Phase.PREFILL, c));
      assertEquals(List.of(new BreakerAction.Probe("P0", ProbeKind.HEALTH, null)), actions, c.name());
      assertEquals(EngineState.SERVING, b.state("P0").orElseThrow());
      assertTrue(b.probeResult("P0", ProbeKind.HEALTH, ProbeOutcome.PASSED).isEmpty());
      assertEquals(0, b.streak("P0", c), "a passed health probe clears the streak");
      b.record(failure("P0", Phase.PREFILL, c));
      b.record(failure("P0", Phase.PREFILL, c));
      assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.SERVING, EngineState.EJECTED, c.wireName())),
          b.probeResult("P0", ProbeKind.HEALTH, ProbeOutcome.FAILED));
    }
  }

  @Test
  void quarantineLastsItsTimeOnTheInjectedClockAndSparesTheLastEngine() {
    BreakerBook b = book("{\"eject_after\": 5, \"failure_quarantine_s\": 30}");
    List<BreakerAction> actions = b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION));
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.SERVING, EngineState.QUARANTINED, "quarantine")), actions);
    assertTrue(b.record(failure("D1", Phase.DECODE, FailureClass.CONNECTION)).isEmpty(), "D1 is the last decode engine");
    now.addAndGet(29_999);
    assertTrue(b.tick().isEmpty());
    now.addAndGet(1);
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.QUARANTINED, EngineState.SERVING, "quarantine_expired")), b.tick());
    assertTrue(b.record(new LegOutcome("D1", Phase.DECODE, false, FailureClass.CONNECTION, "connect_error", null, false)).isEmpty(),
        "faults that do not quarantine do not");
  }

  @Test
  void noQuarantineWhenDisabled() {
    BreakerBook b = book("{\"eject_after\": 5}");
    assertTrue(b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION)).isEmpty());
  }

  @Test
  void livenessMissesEject() {
    BreakerBook b = book("{\"liveness_misses\": 2}");
    assertTrue(b.liveness("P0", false).isEmpty());
    assertTrue(b.liveness("P0", true).isEmpty(), "a healthy answer resets the misses");
    b.liveness("P0", false);
    assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.SERVING, EngineState.EJECTED, "liveness")), b.liveness("P0", false));
    assertEquals(List.of("P1", "D0", "D1"), b.servingEngines());
  }

  @Test
  void ejectedEnginesAreHealthProbedAtReadmissionWithoutAContractAndValidatedWithOne() {
    BreakerBook dev = book("{}");
    dev.liveness("P0", false);
    dev.liveness("P0", false);
    assertEquals(List.of(new BreakerAction.Probe("P0", ProbeKind.HEALTH, null)), dev.readmissionRound());
    assertEquals(List.of(new BreakerAction.StateChange("P0", EngineState.EJECTED, EngineState.SERVING, "health_probe")),
        dev.probeResult("P0", ProbeKind.HEALTH, ProbeOutcome.PASSED));

    BreakerBook pinned = new BreakerBook(FLEET, recovery("{}"), true, now::get);
    pinned.liveness("P0", false);
    pinned.liveness("P0", false);
    assertEquals(List.of(new BreakerAction.Probe("P0", ProbeKind.LIFECYCLE, null)), pinned.readmissionRound());
  }

  @Test
  void adminEjectionsWaitForAnAdminReadmission() {
    BreakerBook b = book("{}");
    b.eject("D0");
    assertTrue(b.readmissionRound().isEmpty());
    assertEquals(List.of(new BreakerAction.StateChange("D0", EngineState.EJECTED, EngineState.SERVING, "admin")), b.readmit("D0"));
    b.drain("D1", true);
    assertEquals(EngineState.DRAINING, b.state("D1").orElseThrow());
    b.drain("D1", false);
    assertEquals(EngineState.SERVING, b.state("D1").orElseThrow());
    b.quarantine("P0", 5);
    now.addAndGet(5_000);
    assertEquals(EngineState.SERVING, ((BreakerAction.StateChange) b.tick().get(0)).to());
  }

  @Test
  void wholeWaveHoldsTheFleetUntilAWaveRestart() {
    BreakerBook b = new BreakerBook(FLEET, recovery("{\"eject_after\": 1}"), true, now::get);
    b.reconfigure(FLEET, new RecoveryConfig(1, 1.0, 10, 10, 2, 0, narwhal.common.config.RestartPolicy.WHOLE_WAVE), true);
    List<BreakerAction> actions = b.record(failure("D0", Phase.DECODE, FailureClass.CONNECTION));
    assertTrue(actions.contains(new BreakerAction.FleetHold(true)), String.valueOf(actions));
    assertTrue(b.fleetHold());
    assertTrue(b.readmissionRound().isEmpty(), "no engine is readmitted alone");
    assertTrue(b.probeResult("D0", ProbeKind.LIFECYCLE, ProbeOutcome.PASSED).isEmpty());
    assertEquals(EngineState.EJECTED, b.state("D0").orElseThrow());
    List<BreakerAction> restart = b.waveRestarted();
    assertTrue(restart.contains(new BreakerAction.FleetHold(false)));
    assertEquals(EngineState.SERVING, b.state("D0").orElseThrow());
    assertFalse(b.fleetHold());
  }
}
