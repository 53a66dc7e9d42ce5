package narwhal.router;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shared retry-credit pool (docs/errors.md). */
class RetryBudgetTest {

  @Test
  void tenCompletionsAtOneTenthRestoreExactlyOneCredit() {
    RetryBudget budget = new RetryBudget(1, 0.1);
    assertEquals(1.0, budget.credits(), "the pool starts full");
    assertTrue(budget.available());
    assertTrue(budget.trySpend());
    assertEquals(0.0, budget.credits());
    assertFalse(budget.available());
    assertFalse(budget.trySpend(), "no credit, no retry");
    assertEquals(0.0, budget.credits(), "never below zero");
    for (int i = 1; i <= 9; i++) {
      budget.completed();
      assertFalse(budget.available(), "after " + i + " completions: " + budget.credits());
    }
    budget.completed();
    assertEquals(1.0, budget.credits(), "ten completions restore exactly one credit");
    assertTrue(budget.available());
    for (int i = 0; i < 25; i++) budget.completed();
    assertEquals(1.0, budget.credits(), "never above the pool size");
    assertTrue(budget.trySpend());
    assertFalse(budget.trySpend());
  }

  @Test
  void poolOfTenIsCappedAndReplenishedInExactSteps() {
    RetryBudget budget = new RetryBudget(10, 0.1);
    for (int i = 0; i < 10; i++) assertTrue(budget.trySpend());
    assertFalse(budget.trySpend());
    for (int i = 0; i < 30; i++) budget.completed();
    assertEquals(3.0, budget.credits(), "30 × 0.1 is exactly 3 credits");
    for (int i = 0; i < 1000; i++) budget.completed();
    assertEquals(10.0, budget.credits(), "capped at the pool size");
  }

  @Test
  void zeroBudgetNeverRetriesAndResizeCutsCredits() {
    RetryBudget none = new RetryBudget(0, 0.5);
    assertFalse(none.available());
    none.completed();
    assertFalse(none.trySpend());
    assertEquals(0.0, none.credits());

    RetryBudget budget = new RetryBudget(10, 0.1);
    budget.resize(2, 0.5);
    assertEquals(2.0, budget.credits());
    assertTrue(budget.trySpend());
    budget.completed();
    budget.completed();
    assertEquals(2.0, budget.credits());
  }
}
