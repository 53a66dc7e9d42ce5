package narwhal.placement;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The prefix index's bounds: remembered homes, the exchange queue, forgetting an engine. */
class PrefixIndexTest {
  @Test
  void aPrefixKeepsItsTwoNewestHomesNewestFirst() {
    PrefixIndex index = new PrefixIndex();
    index.placed("p", "A");
    index.placed("p", "B");
    index.learned("p", "C");
    assertEquals(List.of("C", "B"), index.homes("p"));
    index.placed("p", "B");
    assertEquals(List.of("B", "C"), index.homes("p"));
    assertEquals(List.of(), index.homes("unknown"));
  }

  @Test
  void theExchangeQueueSendsEachPrefixOnceAndLearnedOnesNever() {
    PrefixIndex index = new PrefixIndex();
    index.placed("p", "A");
    index.placed("p", "A");
    index.placed("q", "A");
    index.placed("p", "B");
    index.learned("r", "C");
    assertEquals(Map.of("p", "B", "q", "A"), index.drain());
    assertTrue(index.drain().isEmpty());
  }

  @Test
  void aSnapshotTakenIntoAFullIndexForgetsNothingThisReplicaKnows() {
    PrefixIndex index = new PrefixIndex();
    for (int i = 0; i < PrefixIndex.CAPACITY; i++) index.placed("own " + i, "A");
    assertTrue(!index.fill("peer's", List.of("B")), "no room: a peer's prefix of unknown age does not push out one placed here");
    assertEquals(PrefixIndex.CAPACITY, index.size());
    assertEquals(List.of("A"), index.homes("own 0"), "the least recently used own prefix is still known");
    assertEquals(List.of(), index.homes("peer's"));
  }

  @Test
  void aFloodOfUniquePromptsIsBoundedAndForgetsTheLeastRecentlyUsedFirst() {
    PrefixIndex index = new PrefixIndex();
    index.placed("shared", "A");
    for (int i = 0; i < PrefixIndex.CAPACITY * 2; i++) {
      index.placed("unique " + i, "B");
      if (i % 1000 == 0) index.homes("shared");
    }
    assertEquals(PrefixIndex.CAPACITY, index.size());
    assertEquals(List.of("A"), index.homes("shared"), "a prefix in use stays while unique ones come and go");
    assertEquals(List.of(), index.homes("unique 0"));
    assertEquals(PrefixIndex.MAX_PENDING, index.drain().size());
  }

  @Test
  void forgettingAnEngineLeavesThePrefixesItSharedAndDropsThoseOnlyItHeld() {
    PrefixIndex index = new PrefixIndex();
    index.placed("p", "A");
    index.placed("p", "B");
    index.placed("q", "B");
    index.placed("r", "C");
    index.forget("B");
    assertEquals(List.of("A"), index.homes("p"));
    assertEquals(List.of(), index.homes("q"));
    assertEquals(List.of("C"), index.homes("r"));
    assertEquals(2, index.size());
    assertEquals(Map.of("r", "C"), index.drain(), "nothing queued names the forgotten engine");
  }

  @Test
  void aPeersEntriesAreTakenInTheirOrderAndNeverOverWhatThisIndexKnows() {
    PrefixIndex peer = new PrefixIndex();
    peer.placed("old", "A");
    peer.placed("two", "A");
    peer.placed("two", "B");
    peer.placed("mine", "A");
    List<String[]> entries = peer.entries();
    assertEquals(List.of("old|A", "two|B|A", "mine|A"), entries.stream().map(e -> String.join("|", e)).toList(),
        "least recently used first, each prefix's homes newest first");

    PrefixIndex index = new PrefixIndex();
    index.placed("mine", "C");
    for (String[] e : entries) index.fill(e[0], List.of(e).subList(1, e.length));
    assertEquals(List.of("B", "A"), index.homes("two"), "the peer's order of homes is kept");
    assertEquals(List.of("C"), index.homes("mine"), "a prefix this replica placed keeps its home");
    assertEquals(Map.of("mine", "C"), index.drain(), "what was taken is not sent on to the others");
    assertTrue(!index.fill("new", List.of()), "an entry with no home left is not taken");
    assertEquals(3, index.size());
  }
}
