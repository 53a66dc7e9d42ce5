package narwhal.common.fault;

/** The leg of an attempt a fault happened in; also the error {@code type} clients see for engine faults. */
public enum Phase {
  PREFILL, DECODE;

  private static final Phase[] ALL = values();
  private final String wire = name().toLowerCase(java.util.Locale.ROOT);

  public String wireName() {
    return wire;
  }

  /** The constant whose wire name is {@code s}, in any case (on the request path: no allocation). */
  public static Phase parse(String s) {
    java.util.Objects.requireNonNull(s, "Name is null");
    for (Phase v : ALL) if (v.wire.equalsIgnoreCase(s)) return v;
    throw new IllegalArgumentException("No enum constant " + Phase.class.getCanonicalName() + "." + s);
  }
}
