package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.List;

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

  public static final int DEFAULT_EJECT_AFTER = 3;
  public static final double DEFAULT_MONITOR_INTERVAL_S = 1.0;
  public static final int DEFAULT_READMIT_EVERY = 10;
  public static final int DEFAULT_LIVENESS_EVERY = 10;
  public static final int DEFAULT_LIVENESS_MISSES = 2;
  /** No quarantine after a failed leg. */
  public static final double DEFAULT_FAILURE_QUARANTINE_S = 0;

  static final Key<RecoveryConfig, Integer> EJECT_AFTER = Key.integer("eject_after", RecoveryConfig::ejectAfter,
      DEFAULT_EJECT_AFTER, 1, Integer.MAX_VALUE);
  static final Key<RecoveryConfig, Double> MONITOR_INTERVAL_S = Key.positiveSeconds("monitor_interval_s",
      RecoveryConfig::monitorIntervalS, DEFAULT_MONITOR_INTERVAL_S);
  static final Key<RecoveryConfig, Integer> READMIT_EVERY = Key.integer("readmit_every", RecoveryConfig::readmitEvery,
      DEFAULT_READMIT_EVERY, 1, Integer.MAX_VALUE);
  static final Key<RecoveryConfig, Integer> LIVENESS_EVERY = Key.integer("liveness_every",
      RecoveryConfig::livenessEvery, DEFAULT_LIVENESS_EVERY, 1, Integer.MAX_VALUE);
  static final Key<RecoveryConfig, Integer> LIVENESS_MISSES = Key.integer("liveness_misses",
      RecoveryConfig::livenessMisses, DEFAULT_LIVENESS_MISSES, 1, Integer.MAX_VALUE);
  static final Key<RecoveryConfig, Double> FAILURE_QUARANTINE_S = Key.nonNegativeSeconds("failure_quarantine_s",
      RecoveryConfig::failureQuarantineS, DEFAULT_FAILURE_QUARANTINE_S);
  /** {@code whole_wave} needs an {@code engine_contract}: checked in {@link #read}. */
  static final Key<RecoveryConfig, RestartPolicy> ENGINE_RESTART_POLICY = Key.choice("engine_restart_policy",
      RecoveryConfig::engineRestartPolicy, RestartPolicy.INDIVIDUAL, List.of(RestartPolicy.values()),
      RestartPolicy::wireName);

  static final Section<RecoveryConfig> SECTION = new Section<>(EJECT_AFTER, MONITOR_INTERVAL_S, READMIT_EVERY,
      LIVENESS_EVERY, LIVENESS_MISSES, FAILURE_QUARANTINE_S, ENGINE_RESTART_POLICY);

  public static RecoveryConfig defaults() {
    return read(SectionReader.empty("recovery", SECTION), false);
  }

  static RecoveryConfig read(SectionReader r, boolean hasEngineContract) {
    RecoveryConfig read = new RecoveryConfig(r.get(EJECT_AFTER), r.get(MONITOR_INTERVAL_S), r.get(READMIT_EVERY),
        r.get(LIVENESS_EVERY), r.get(LIVENESS_MISSES), r.get(FAILURE_QUARANTINE_S), r.get(ENGINE_RESTART_POLICY));
    if (read.wholeWave() && !hasEngineContract) {
      throw r.invalid(ENGINE_RESTART_POLICY.name(),
          "\"individual\" when engine_contract is null (\"whole_wave\" needs an engine_contract)");
    }
    return read;
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
    return SECTION.toJson(this);
  }
}
