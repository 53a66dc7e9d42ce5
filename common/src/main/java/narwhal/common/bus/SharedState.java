package narwhal.common.bus;

/**
 * Names of the cluster-wide state in Vert.x {@code SharedData}: the breaker writes each engine's placement state as
 * JSON text ({@code {"iid", "state", "cause", "until_ms"?, "producer"?, "changed_ms", "origin"}}: the newest
 * {@code changed_ms}/{@code origin} wins) and the fleet hold; placement and breakers on every replica follow it.
 */
public final class SharedState {
  /** AsyncMap iid → engine state event; the key {@link #FLEET_HOLD_KEY} holds the fleet hold. */
  public static final String ENGINE_STATE_MAP = "narwhal.engine-state";
  public static final String FLEET_HOLD_KEY = "__fleet_hold";

  private SharedState() {
  }
}
