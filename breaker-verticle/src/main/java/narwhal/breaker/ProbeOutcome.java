package narwhal.breaker;

/** A probe's result. Inconclusive: the probe could not judge the engine (its producer could not make a handoff). */
enum ProbeOutcome {
  PASSED, FAILED, INCONCLUSIVE;

  public String wireName() {
    return name().toLowerCase();
  }
}
