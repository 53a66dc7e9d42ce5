package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * The breaker's cadence (docs/operations.md#breaker-states): the streak length that triggers a verdict, the monitor tick
 * that readmission and liveness sweeps count in, how long a failure quarantine lasts, and whether
 * ejected engines come back one by one or as a whole wave.
 */
public record RecoveryConfig(
    int ejectAfter,
    double monitorIntervalS,
    int readmitEvery,
    int livenessEvery,
    int livenessMisses,
    double failureQuarantineS,
    RestartPolicy engineRestartPolicy) {

  static final Set<String> KEYS = Set.of("eject_after", "monitor_interval_s", "readmit_every",
      "liveness_every", "liveness_misses", "failure_quarantine_s", "engine_restart_policy");

  public static RecoveryConfig defaults() {
    return new RecoveryConfig(3, 1.0, 10, 10, 2, 0, RestartPolicy.INDIVIDUAL);
  }

  static RecoveryConfig read(SectionReader r, boolean hasEngineContract) {
    RecoveryConfig d = defaults();
    int ejectAfter = r.integer("eject_after", d.ejectAfter(), 1, Integer.MAX_VALUE);
    double monitorIntervalS = r.positive("monitor_interval_s", d.monitorIntervalS());
    int readmitEvery = r.integer("readmit_every", d.readmitEvery(), 1, Integer.MAX_VALUE);
    int livenessEvery = r.integer("liveness_every", d.livenessEvery(), 1, Integer.MAX_VALUE);
    int livenessMisses = r.integer("liveness_misses", d.livenessMisses(), 1, Integer.MAX_VALUE);
    double failureQuarantineS = r.nonNegative("failure_quarantine_s", d.failureQuarantineS());
    RestartPolicy policy = RestartPolicy.parse(r.oneOf("engine_restart_policy",
        d.engineRestartPolicy().wireName(), RestartPolicy.WIRE_NAMES));
    if (policy == RestartPolicy.WHOLE_WAVE && !hasEngineContract) {
      throw r.invalid("engine_restart_policy",
          "\"individual\" when engine_contract is null (\"whole_wave\" needs an engine_contract)");
    }
    return new RecoveryConfig(ejectAfter, monitorIntervalS, readmitEvery, livenessEvery,
        livenessMisses, failureQuarantineS, policy);
  }

  public long monitorIntervalMs() {
    return Seconds.toMillis(monitorIntervalS);
  }

  /** How often ejected engines are tried for readmission: {@code monitor_interval_s × readmit_every}. */
  public long readmitIntervalMs() {
    return Seconds.toMillis(monitorIntervalS * readmitEvery);
  }

  /** How often serving engines' {@code /health} is swept: {@code monitor_interval_s × liveness_every}. */
  public long livenessIntervalMs() {
    return Seconds.toMillis(monitorIntervalS * livenessEvery);
  }

  public long failureQuarantineMs() {
    return Seconds.toMillis(failureQuarantineS);
  }

  public boolean wholeWave() {
    return engineRestartPolicy == RestartPolicy.WHOLE_WAVE;
  }

  public JsonObject toJson() {
    return new JsonObject()
        .put("eject_after", ejectAfter)
        .put("monitor_interval_s", Seconds.toJson(monitorIntervalS))
        .put("readmit_every", readmitEvery)
        .put("liveness_every", livenessEvery)
        .put("liveness_misses", livenessMisses)
        .put("failure_quarantine_s", Seconds.toJson(failureQuarantineS))
        .put("engine_restart_policy", engineRestartPolicy.wireName());
  }
}
