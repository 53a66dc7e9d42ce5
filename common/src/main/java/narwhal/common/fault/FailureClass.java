package narwhal.common.fault;

/**
 * Breaker failure classes (docs/operations.md#breaker-states): each engine keeps one consecutive streak per class, and the
 * class decides the verdict when the streak reaches {@code recovery.eject_after}.
 */
public enum FailureClass {
  CONNECTION, TIMEOUT, OVERLOAD, INFERENCE_STATUS, KV_HANDOFF, STREAM, LIVENESS,
  /** The engine answered that it does not serve the fleet's model: ejected at the first answer, back only once it lists the model. */
  MODEL;

  private static final FailureClass[] ALL = values();
  private final String wire = name().toLowerCase(java.util.Locale.ROOT);

  public String wireName() {
    return wire;
  }

  /** The constant whose wire name is {@code s}, in any case (on the request path: no allocation). */
  public static FailureClass parse(String s) {
    java.util.Objects.requireNonNull(s, "Name is null");
    for (FailureClass v : ALL) if (v.wire.equalsIgnoreCase(s)) return v;
    throw new IllegalArgumentException("No enum constant " + FailureClass.class.getCanonicalName() + "." + s);
  }
}
