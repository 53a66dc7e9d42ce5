package narwhal.common.fault;

/**
 * Breaker failure classes (CONTRACT §6.1): each engine keeps one consecutive streak per class, and the
 * class decides the verdict when the streak reaches {@code recovery.eject_after}.
 */
public enum FailureClass {
  CONNECTION, TIMEOUT, OVERLOAD, INFERENCE_STATUS, KV_HANDOFF, STREAM, LIVENESS;

  public String wireName() {
    return name().toLowerCase();
  }

  public static FailureClass parse(String s) {
    return valueOf(s.toUpperCase());
  }
}
