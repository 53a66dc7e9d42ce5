package narwhal.breaker;

/** The checks the breaker runs against one engine: {@code /health}, a two-leg inference, or full lifecycle validation. */
enum ProbeKind {
  HEALTH, INFERENCE, LIFECYCLE;

  public String wireName() {
    return name().toLowerCase();
  }
}
