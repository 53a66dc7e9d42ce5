package narwhal.breaker;

import narwhal.common.bus.EngineState;
import narwhal.common.fault.FailureClass;

/**
 * What a {@link BreakerBook} decision asks its verticle to do: publish a state change or a streak change, run a probe,
 * or change the fleet hold.
 */
sealed interface BreakerAction {

  /** An engine moved between placement states; {@code cause} says why (a failure class, "admin", a probe's evidence). */
  record StateChange(String iid, EngineState from, EngineState to, String cause) implements BreakerAction {}

  /**
   * Run a probe of {@code kind}; {@code producerIid}, for inference probes, names the engine that must make the handoff;
   * {@code streamed}: its decode streams several tokens, as the stream fault that took the engine out broke one.
   */
  record Probe(String iid, ProbeKind kind, String producerIid, boolean streamed) implements BreakerAction {
    Probe(String iid, ProbeKind kind, String producerIid) {
      this(iid, kind, producerIid, false);
    }
  }

  /** An engine's streak of consecutive failures of one class changed (a failure counted, or the class reset). */
  record StreakChanged(String iid, FailureClass failureClass, int streak) implements BreakerAction {}

  /** The whole-wave fleet hold was put on or lifted. */
  record FleetHold(boolean held) implements BreakerAction {}
}
