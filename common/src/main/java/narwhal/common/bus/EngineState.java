package narwhal.common.bus;

/** An engine's standing in placement. Only {@link #SERVING} engines receive new legs. */
public enum EngineState {
  SERVING, QUARANTINED, HELD, EJECTED, DRAINING;

  public String wireName() {
    return name().toLowerCase();
  }

  public static EngineState parse(String s) {
    return valueOf(s.toUpperCase());
  }
}
