package narwhal.common.bus;

/** An engine's standing in placement. Only {@link #SERVING} engines receive new legs. */
public enum EngineState {
  SERVING, QUARANTINED, HELD, EJECTED, DRAINING;

  private static final EngineState[] ALL = values();
  private final String wire = name().toLowerCase(java.util.Locale.ROOT);

  public String wireName() {
    return wire;
  }

  /** The constant whose wire name is {@code s}, in any case (on the request path: no allocation). */
  public static EngineState parse(String s) {
    java.util.Objects.requireNonNull(s, "Name is null");
    for (EngineState v : ALL) if (v.wire.equalsIgnoreCase(s)) return v;
    throw new IllegalArgumentException("No enum constant " + EngineState.class.getCanonicalName() + "." + s);
  }
}
