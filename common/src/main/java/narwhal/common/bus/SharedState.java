package narwhal.common.bus;

/**
 * Names of the cluster-wide state in Vert.x {@code SharedData}: the breaker writes each engine's placement state
 * ({@code {"iid","state","cause"}} as JSON text) and the fleet hold; placement on any replica reads them at start.
 */
public final class SharedState {
  /** AsyncMap iid → engine state event; the key {@link #FLEET_HOLD_KEY} holds the fleet hold. */
  public static final String ENGINE_STATE_MAP = "narwhal.engine-state";
  public static final String FLEET_HOLD_KEY = "__fleet_hold";

  private SharedState() {
  }
}
