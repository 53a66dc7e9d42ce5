package narwhal.breaker;

import narwhal.common.bus.EngineState;

/** What a {@link BreakerBook} decision asks its verticle to do: publish a state change, run a probe, or change the fleet hold. */
public sealed interface BreakerAction {

  /** An engine moved between placement states; {@code cause} says why (a failure class, "admin", a probe's evidence). */
  record StateChange(String iid, EngineState from, EngineState to, String cause) implements BreakerAction {}

  /** Run a probe of {@code kind}; {@code producerIid}, for inference probes, names the engine that must make the handoff. */
  record Probe(String iid, ProbeKind kind, String producerIid) implements BreakerAction {}

  /** The whole-wave fleet hold was put on or lifted. */
  record FleetHold(boolean held) implements BreakerAction {}
}
