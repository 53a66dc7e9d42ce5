package narwhal.router;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fair order of one class (docs/operations.md#sharing-a-fleet): start-time fair queueing by cost over weight. A
 * tenant below its share goes before a flood's backlog whatever its prompt costs; backlogged tenants share by cost and
 * weight; an idle tenant saves up no credit.
 */
class FairQueueTest {
  private static final int NORMAL = 1;
  private static final int NO_BURST = 0;
  private static final int BURST = 4;

  private static String poll(FairQueue<String> q) {
    FairQueue.Entry<String> e = q.poll(rank -> true, item -> true);
    return e == null ? null : e.item;
  }

  private static List<String> poll(FairQueue<String> q, int n) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) out.add(poll(q));
    return out;
  }

  @Test
  void aSteadyTenantsLongPromptGoesBeforeAFloodsBacklogOfShortOnes() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 10; i++) q.add("flood-" + i, NORMAL, "flood", 1, 16, NO_BURST);
    assertEquals(List.of("flood-0", "flood-1"), poll(q, 2));
    q.add("steady", NORMAL, "steady", 1, 48, NO_BURST);
    // ordered by finish times it waited behind flood-2 and flood-3 (finishes 48 and 64 against its 32 + 48 = 80)
    assertEquals("steady", poll(q), "a tenant with nothing queued starts at the class's clock, before the backlog's next");
  }

  @Test
  void backloggedTenantsShareTheClassByCostOverWeight() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 60; i++) {
      q.add("long", NORMAL, "long", 1, 30, BURST);
      q.add("short", NORMAL, "short", 1, 10, BURST);
      q.add("heavy", NORMAL, "heavy", 2, 30, BURST);
    }
    List<String> out = poll(q, 60);
    long longs = out.stream().filter("long"::equals).count();
    long shorts = out.stream().filter("short"::equals).count();
    long heavies = out.stream().filter("heavy"::equals).count();
    // equal shares of cost over weight: long 30 per item, short 10, heavy 15 -> items in the ratio 1 : 3 : 2
    assertTrue(Math.abs(shorts - 3 * longs) <= 3, "short prompts go three times as often as long ones: " + longs + "/" + shorts);
    assertTrue(Math.abs(heavies - 2 * longs) <= 2, "weight 2 goes twice as often at the same cost: " + longs + "/" + heavies);
  }

  @Test
  void aTenantIdleWhileAnotherRanSavesNoCredit() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 40; i++) q.add("flood", NORMAL, "flood", 1, 10, NO_BURST);
    poll(q, 30);
    for (int i = 0; i < 6; i++) q.add("late", NORMAL, "late", 1, 10, NO_BURST);
    List<String> next = poll(q, 8);
    long late = next.stream().filter("late"::equals).count();
    assertTrue(late >= 3 && late <= 5, "from its arrival on the late tenant shares the turns, it does not take them all: " + next);
  }

  @Test
  void aHigherClassLeavesFirstWhateverTheLowerOnesStart() {
    FairQueue<String> q = new FairQueue<>(2);
    q.add("normal", NORMAL, "a", 1, 1, NO_BURST);
    q.add("high", 0, "b", 1, 1000, NO_BURST);
    assertEquals(List.of("high", "normal"), poll(q, 2));
  }

  @Test
  void aHeldHeadKeepsItsPlaceAndTheNextOfItsTenantGoesAtItsStart() {
    FairQueue<String> q = new FairQueue<>(2);
    q.add("x-held", NORMAL, "x", 1, 10, NO_BURST);
    q.add("x-free", NORMAL, "x", 1, 10, NO_BURST);
    for (int i = 0; i < 3; i++) q.add("y-" + i, NORMAL, "y", 1, 10, NO_BURST);
    FairQueue.Entry<String> first = q.poll(rank -> true, item -> !item.equals("x-held"));
    assertEquals("x-free", first.item, "x's head is held: its next item goes at the head's start (0), tied with y's and x waits less");
    assertEquals("y-0", poll(q), "then y's turn: x has had one");
    assertEquals("x-held", poll(q), "the held head, free now, is next for x");
  }

  @Test
  void aTenantUnderItsShareStartsAFewAheadOfABacklogAndThenSharesAgain() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 30; i++) q.add("flood", NORMAL, "flood", 1, 10, BURST);
    poll(q, 10);
    for (int i = 0; i < BURST + 1; i++) q.add("steady", NORMAL, "steady", 1, 10, BURST);
    assertEquals(java.util.Collections.nCopies(BURST + 1, "steady"), poll(q, BURST + 1),
        "a tenant that had nothing queued starts its few together, before the flood's next");
    for (int i = 0; i < 6; i++) q.add("steady", NORMAL, "steady", 1, 10, BURST);
    List<String> next = poll(q, 8);
    long steady = next.stream().filter("steady"::equals).count();
    assertTrue(steady >= 3 && steady <= 5, "its credit spent, it shares the turns with the flood again: " + next);
  }

  @Test
  void withoutBurstATenantsFewAreInterleavedWithTheBacklog() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 30; i++) q.add("flood", NORMAL, "flood", 1, 10, NO_BURST);
    poll(q, 10);
    for (int i = 0; i < 3; i++) q.add("steady", NORMAL, "steady", 1, 10, NO_BURST);
    // starts 90, 100, 110 against the flood's 100, 110, ...: on a tie the tenant with less waiting goes first
    assertEquals(List.of("steady", "steady", "flood", "steady", "flood"), poll(q, 5));
  }

  /**
   * A tenant that keeps one attempt queued at a time (its next request arrives as its last one gets its turn) is
   * backlogged as much as the flood beside it and is owed half the turns at equal weight and cost. Its lane emptied at
   * each turn and was forgotten, its tag behind the clock: each next attempt came back with a full burst of credit,
   * starting before the flood's next whatever the clock had moved, and took every turn while the flood starved.
   */
  @Test
  void aTenantThatQueuesOneAtATimeGetsItsShareNotEveryTurn() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 300; i++) q.add("flood", NORMAL, "flood", 1, 10, BURST);
    poll(q, 20);
    List<String> out = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      q.add("serial", NORMAL, "serial", 1, 10, BURST);
      out.add(poll(q));
    }
    long serial = out.stream().filter("serial"::equals).count();
    assertTrue(serial <= 50 + BURST + 1, "half the turns and its burst, not " + serial + " of 100: " + out);
    assertTrue(serial >= 50 - 1, "and not less than half: " + serial + " of 100: " + out);
  }

  /**
   * The class's clock and tags only grow: at about 1e15 (a tenant of weight 1 asking the largest estimate the router
   * makes, about 1e7 tokens, for each of its requests moves it that much per turn) a weight-1000 tenant's cheapest
   * attempt adds 17 / 1000 to its tag, less than half a double's step there, and its tag stops moving: it takes every
   * turn of its class, and a weight-10 tenant beside it, owed one turn in 101, gets none.
   */
  @Test
  void sharesHoldAfterTheClassClockHasGoneFar() {
    FairQueue<String> q = new FairQueue<>(2);
    for (int i = 0; i < 10; i++) q.add("far", NORMAL, "far", 1, 1e14, BURST);
    poll(q, 10);
    for (int i = 0; i < 1100; i++) {
      q.add("heavy", NORMAL, "heavy", 1000, 17, BURST);
      q.add("light", NORMAL, "light", 10, 17, BURST);
    }
    List<String> out = poll(q, 1010);
    long light = out.stream().filter("light"::equals).count();
    assertTrue(light >= 7 && light <= 15, "weight 10 against 1000 at the same cost: about 10 turns of 1010, got " + light);
  }
}
