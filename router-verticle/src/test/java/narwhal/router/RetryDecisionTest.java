package narwhal.router;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The retry decision (docs/errors.md) as a pure function: the reasons in their contractual order, and full-jitter backoff. */
class RetryDecisionTest {

  /** Facts where every condition holds. */
  private static RetryDecision.Facts allowed() {
    return new RetryDecision.Facts(true, false, 1, 2, true, 50, 10_000, true);
  }

  @Test
  void allConditionsHoldIsAllowed() {
    assertEquals("allowed", RetryDecision.decide(allowed()).wireName());
    assertEquals(narwhal.common.fault.RetryReason.ALLOWED.wireName(), "allowed");
  }

  @Test
  void everyReasonInContractOrder() {
    // Every condition fails: the first in order is named; then each is cured in turn and the next one shows.
    RetryDecision.Facts f = new RetryDecision.Facts(false, true, 2, 2, false, 500, 100, false);
    assertEquals("not_dispatched", RetryDecision.decide(f).wireName());
    f = new RetryDecision.Facts(true, true, 2, 2, false, 500, 100, false);
    assertEquals("output_started", RetryDecision.decide(f).wireName());
    f = new RetryDecision.Facts(true, false, 2, 2, false, 500, 100, false);
    assertEquals("attempt_limit", RetryDecision.decide(f).wireName());
    f = new RetryDecision.Facts(true, false, 1, 2, false, 500, 100, false);
    assertEquals("non_transient", RetryDecision.decide(f).wireName());
    f = new RetryDecision.Facts(true, false, 1, 2, true, 500, 100, false);
    assertEquals("original_deadline", RetryDecision.decide(f).wireName());
    f = new RetryDecision.Facts(true, false, 1, 2, true, 50, 100, false);
    assertEquals("shared_budget", RetryDecision.decide(f).wireName());
    f = new RetryDecision.Facts(true, false, 1, 2, true, 50, 100, true);
    assertEquals("allowed", RetryDecision.decide(f).wireName());
  }

  @Test
  void eachConditionAloneIsDecisive() {
    RetryDecision.Facts ok = allowed();
    assertEquals("not_dispatched", RetryDecision.decide(new RetryDecision.Facts(false, ok.outputStarted(), ok.attempt(),
        ok.maxAttempts(), ok.transientFault(), ok.backoffMs(), ok.remainingMs(), ok.creditAvailable())).wireName());
    assertEquals("output_started", RetryDecision.decide(new RetryDecision.Facts(true, true, 1, 2, true, 50, 10_000, true)).wireName());
    assertEquals("attempt_limit", RetryDecision.decide(new RetryDecision.Facts(true, false, 2, 2, true, 50, 10_000, true)).wireName());
    assertEquals("attempt_limit", RetryDecision.decide(new RetryDecision.Facts(true, false, 1, 1, true, 50, 10_000, true)).wireName(),
        "max_attempts 1 means no retry");
    assertEquals("allowed", RetryDecision.decide(new RetryDecision.Facts(true, false, 2, 3, true, 50, 10_000, true)).wireName());
    assertEquals("non_transient", RetryDecision.decide(new RetryDecision.Facts(true, false, 1, 2, false, 50, 10_000, true)).wireName());
    assertEquals("original_deadline", RetryDecision.decide(new RetryDecision.Facts(true, false, 1, 2, true, 100, 100, true)).wireName(),
        "a backoff that ends exactly at the deadline does not end before it");
    assertEquals("allowed", RetryDecision.decide(new RetryDecision.Facts(true, false, 1, 2, true, 99, 100, true)).wireName());
    assertEquals("shared_budget", RetryDecision.decide(new RetryDecision.Facts(true, false, 1, 2, true, 50, 10_000, false)).wireName());
  }

  @Test
  void backoffIsFullJitterUnderTheCappedCeiling() {
    long base = 100;
    long cap = 1000;
    for (int attempt = 1; attempt <= 6; attempt++) {
      long ceiling = Math.min(cap, base << (attempt - 1));
      for (int i = 0; i < 1000; i++) {
        double u = i / 1000.0;
        long b = RetryDecision.backoffMs(u, attempt, base, cap);
        assertTrue(b >= 0 && b < ceiling, "attempt " + attempt + ", u " + u + ": " + b + " not in [0, " + ceiling + ")");
      }
      assertEquals(0, RetryDecision.backoffMs(0.0, attempt, base, cap), "uniform 0 gives no wait");
      long top = RetryDecision.backoffMs(Math.nextDown(1.0), attempt, base, cap);
      assertTrue(top < ceiling && top >= ceiling - 1, "uniform → 1 approaches the ceiling " + ceiling + ": " + top);
      assertEquals(ceiling / 2, RetryDecision.backoffMs(0.5, attempt, base, cap));
    }
    assertEquals(100, Math.min(1000, 100), "attempt 1: min(cap, base)");
    assertTrue(RetryDecision.backoffMs(Math.nextDown(1.0), 1, base, cap) < 100);
    assertTrue(RetryDecision.backoffMs(Math.nextDown(1.0), 10, base, cap) < cap, "the cap bounds late attempts");
    assertTrue(RetryDecision.backoffMs(Math.nextDown(1.0), 10, base, cap) >= cap - 1);
  }
}
