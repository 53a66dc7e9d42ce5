package narwhal.common.fault;

/** The leg of an attempt a fault happened in; also the error {@code type} clients see for engine faults. */
public enum Phase {
  PREFILL, DECODE;

  public String wireName() {
    return name().toLowerCase();
  }

  public static Phase parse(String s) {
    return valueOf(s.toUpperCase());
  }
}
