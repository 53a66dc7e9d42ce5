package narwhal.breaker;

/** A probe's outcome and what it found, in a line an operator can act on (no secrets; engine names only). */
record ProbeResult(ProbeOutcome outcome, String detail) {

  static ProbeResult passed(String detail) {
    return new ProbeResult(ProbeOutcome.PASSED, detail);
  }

  static ProbeResult failed(String detail) {
    return new ProbeResult(ProbeOutcome.FAILED, detail);
  }

  static ProbeResult inconclusive(String detail) {
    return new ProbeResult(ProbeOutcome.INCONCLUSIVE, detail);
  }

  boolean passed() {
    return outcome == ProbeOutcome.PASSED;
  }
}
