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
}
