package narwhal.common.bus;

/**
 * The version of a piece of cluster state (an engine's state, the fleet hold): when it changed and which replica
 * changed it. The one rule of every replica's breaker and placement: of two versions the later {@code changedMs}
 * wins, and on a tie the greater {@code origin}, so all replicas keep the same version whatever order they see them in.
 */
public record StateVersion(long changedMs, String origin) {
  /** Older than every real version: what a replica holds before it has seen one. */
  public static final StateVersion NONE = new StateVersion(0, "");

  public boolean newerThan(StateVersion other) {
    return changedMs > other.changedMs || changedMs == other.changedMs && origin.compareTo(other.origin) > 0;
  }
}
