package narwhal.breaker;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import narwhal.common.bus.EngineState;
import narwhal.common.fault.FailureClass;

import java.util.List;

/** Engine-health metrics of docs/metrics.md, labelled by engine iid (a fixed fleet) and by fixed class, kind and outcome names. */
final class BreakerMetrics {
  private final MeterRegistry registry;
  private final BreakerBook book;

  BreakerMetrics(MeterRegistry registry, BreakerBook book) {
    this.registry = registry;
    this.book = book;
  }

  private static final List<String> EJECTION_CAUSES = List.of("connection", "timeout", "overload", "inference_status",
      "kv_handoff", "stream", "liveness", "admin");
  private static final List<String> READMISSION_EVIDENCE = List.of("health_probe", "inference_probe", "lifecycle_probe",
      "admin", "wave_restart");

  /**
   * Engines whose series {@link #trackInTurns} registers per turn of the event loop: about 35 series each, so 1,000
   * engines registered at once held a starting replica's loop about 2 s on a cold JVM, ahead of its readiness.
   */
  static final int ENGINES_PER_TURN = 20;
  /**
   * The engines the fleet lists (the last {@link #trackInTurns} or {@link #retain}): a check, probe or readmission of an
   * engine a reload removed while it ran counts nothing when it ends, so the removed engine's series do not come back.
   * Null before the first: everything counts.
   */
  private java.util.Set<String> listed;
  /** Which {@link #trackInTurns} runs: a newer one (a reload) stops the one before. */
  private long tracking;

  /**
   * Registers the engines' series {@value #ENGINES_PER_TURN} engines at a time, the first now and each next batch in a
   * later turn of the current context, so a start or a reload with many engines does not hold the event loop. An
   * engine's counters are also registered by their first use, so nothing counted in between is lost; a call stops the
   * previous one's remaining batches.
   */
  void trackInTurns(Vertx vertx, List<String> iids) {
    listed = java.util.Set.copyOf(iids);
    trackFrom(vertx, List.copyOf(iids), 0, ++tracking);
  }

  private void trackFrom(Vertx vertx, List<String> iids, int from, long run) {
    if (run != tracking) return;
    int to = Math.min(iids.size(), from + ENGINES_PER_TURN);
    for (int i = from; i < to; i++) track(iids.get(i));
    if (to < iids.size()) vertx.runOnContext(v -> trackFrom(vertx, iids, to, run));
  }

  /** Registers an engine's gauges and counters at zero, so every series exists from start (idempotent). */
  void track(String iid) {
    gauge("narwhal.ejected", "1 while the engine is ejected", iid, EngineState.EJECTED);
    gauge("narwhal.engine.quarantined", "1 while the engine is quarantined", iid, EngineState.QUARANTINED);
    gauge("narwhal.engine.held", "1 while the engine is held until an inference probe passes", iid, EngineState.HELD);
    for (FailureClass c : FailureClass.values()) {
      Gauge.builder("narwhal.engine.breaker.streak", book, b -> b.streak(iid, c))
          .description("consecutive failures of one class").tags("iid", iid, "class", c.wireName()).register(registry);
    }
    EJECTION_CAUSES.forEach(cause -> ejections(iid, cause));
    for (ProbeKind kind : ProbeKind.values()) {
      for (ProbeOutcome outcome : ProbeOutcome.values()) probes(iid, kind, outcome);
    }
    READMISSION_EVIDENCE.forEach(evidence -> readmissions(iid, evidence));
    livenessChecks(iid, true);
    livenessChecks(iid, false);
    refused();
  }

  private static final List<String> ENGINE_SERIES = List.of("narwhal.ejected", "narwhal.engine.quarantined",
      "narwhal.engine.held", "narwhal.engine.breaker.streak", "narwhal.engine.ejections", "narwhal.engine.probes",
      "narwhal.engine.readmissions", "narwhal.engine.liveness.checks");

  /** Keeps the series of the engines listed and drops every other engine's (removed by a reload). */
  void retain(List<String> iids) {
    listed = java.util.Set.copyOf(iids);
    for (String name : ENGINE_SERIES) {
      registry.find(name).meters().stream().filter(m -> !listed.contains(m.getId().getTag("iid"))).forEach(registry::remove);
    }
  }

  private void gauge(String name, String description, String iid, EngineState state) {
    Gauge.builder(name, book, b -> b.state(iid).filter(s -> s == state).isPresent() ? 1 : 0).description(description)
        .tag("iid", iid).register(registry);
  }

  private Counter ejections(String iid, String cause) {
    return Counter.builder("narwhal.engine.ejections").description("engines ejected from placement, by cause")
        .tags("iid", iid, "cause", cause).register(registry);
  }

  private Counter probes(String iid, ProbeKind kind, ProbeOutcome outcome) {
    return Counter.builder("narwhal.engine.probes").description("breaker probes run, by kind and outcome")
        .tags("iid", iid, "kind", kind.wireName(), "outcome", outcome.wireName()).register(registry);
  }

  private Counter readmissions(String iid, String evidence) {
    return Counter.builder("narwhal.engine.readmissions").description("engines returned to placement, by evidence")
        .tags("iid", iid, "evidence", evidence).register(registry);
  }

  private Counter livenessChecks(String iid, boolean ok) {
    return Counter.builder("narwhal.engine.liveness.checks").description("liveness sweeps of the engine's /health this replica ran, by outcome")
        .tags("iid", iid, "outcome", ok ? "ok" : "missed").register(registry);
  }

  private Counter refused() {
    return Counter.builder("narwhal.admin.refused").description("admin commands refused for a missing or wrong token")
        .register(registry);
  }

  void ejected(String iid, String cause) {
    if (listed(iid)) ejections(iid, cause).increment();
  }

  void probed(String iid, ProbeKind kind, ProbeOutcome outcome) {
    if (listed(iid)) probes(iid, kind, outcome).increment();
  }

  void readmitted(String iid, String evidence) {
    if (listed(iid)) readmissions(iid, evidence).increment();
  }

  void livenessChecked(String iid, boolean ok) {
    if (listed(iid)) livenessChecks(iid, ok).increment();
  }

  private boolean listed(String iid) {
    return listed == null || listed.contains(iid);
  }

  void adminRefused() {
    refused().increment();
  }
}
