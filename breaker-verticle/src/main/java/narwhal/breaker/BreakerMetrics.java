package narwhal.breaker;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import narwhal.common.bus.EngineState;
import narwhal.common.fault.FailureClass;

/** Engine-health metrics of CONTRACT §8.3, labelled by engine iid (a fixed fleet) and by fixed class, kind and outcome names. */
final class BreakerMetrics {
  private final MeterRegistry registry;
  private final BreakerBook book;

  BreakerMetrics(MeterRegistry registry, BreakerBook book) {
    this.registry = registry;
    this.book = book;
  }

  /** Registers the per-engine gauges for an engine (idempotent). */
  void track(String iid) {
    gauge("narwhal.ejected", iid, EngineState.EJECTED);
    gauge("narwhal.engine.quarantined", iid, EngineState.QUARANTINED);
    gauge("narwhal.engine.held", iid, EngineState.HELD);
    for (FailureClass c : FailureClass.values()) {
      Gauge.builder("narwhal.engine.breaker.streak", book, b -> b.streak(iid, c)).tags("iid", iid, "class", c.wireName()).register(registry);
    }
  }

  private void gauge(String name, String iid, EngineState state) {
    Gauge.builder(name, book, b -> b.state(iid).filter(s -> s == state).isPresent() ? 1 : 0).tag("iid", iid).register(registry);
  }

  void ejected(String iid, String cause) {
    registry.counter("narwhal.engine.ejections", "iid", iid, "cause", cause).increment();
  }

  void probed(String iid, ProbeKind kind, ProbeOutcome outcome) {
    registry.counter("narwhal.engine.probes", "iid", iid, "kind", kind.wireName(), "outcome", outcome.wireName()).increment();
  }

  void readmitted(String iid, String evidence) {
    registry.counter("narwhal.engine.readmissions", "iid", iid, "evidence", evidence).increment();
  }

  void adminRefused() {
    registry.counter("narwhal.admin.refused").increment();
  }
}
