package narwhal.router;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The order in which waiting items leave (docs/operations.md#sharing-a-fleet): the highest priority class first
 * ({@code rank} 0), and within a class fairly across tenants by start-time fair queueing (Goyal, Vin and Cheng): each
 * item starts at its tenant's virtual time, {@code max(class clock, the finish of the tenant's previous item)}, and
 * finishes {@code cost / weight} later; the earliest start leaves first and sets the class's clock. A tenant gets its
 * weight's share of the class's cost (tokens) whatever it queued; one that was idle starts at the clock, before every
 * backlogged tenant's next item whatever its own cost (ordered by finish times, a steady tenant's long prompt waited
 * behind as many of a flood's short ones as it was longer). A tenant behind the clock may start up to {@code burst}
 * of its items' costs before it ({@code flow.burst}): a few items arriving together go together, ahead of a backlog,
 * as fq_codel serves a sparse flow's first quantum; what it saves up is bounded by that, and refills only as the clock
 * moves, so over time it still gets its weight's share. Within a tenant, arrival order. Not thread-safe: its owner
 * locks it.
 *
 * @param <T> what waits
 */
final class FairQueue<T> {
  /** One waiting item. */
  static final class Entry<T> {
    final T item;
    final Lane lane;
    /** What it added to its lane's tags: its cost over its tenant's weight. */
    final double increment;
    /** Its virtual finish time; it starts {@link #increment} before. */
    double tag;

    private Entry(T item, Lane lane, double increment, double tag) {
      this.item = item;
      this.lane = lane;
      this.increment = increment;
      this.tag = tag;
    }
  }

  /** One tenant's items of one class, in arrival order (their tags grow with it). */
  private static final class Lane {
    final String tenant;
    final int rank;
    final ArrayDeque<Entry<?>> waiting = new ArrayDeque<>();
    double lastTag;
    /** The credit its last item could start with ({@code burst} × its increment): full again once the clock is that far past {@link #lastTag}. */
    double lastCredit;

    Lane(String tenant, int rank) {
      this.tenant = tenant;
      this.rank = rank;
    }
  }

  private final int classes;
  /** Per class: each tenant's lane, while it has items waiting or a tag ahead of the class's clock. */
  private final List<Map<String, Lane>> lanes = new ArrayList<>();
  /** Per class: the lanes with items waiting. */
  private final List<List<Lane>> active = new ArrayList<>();
  private final double[] clock;
  /** Per class: how many lanes its map may hold before the idle ones whose credit is full are swept out. */
  private final int[] sweepAt;
  private int size;
  /**
   * How far a class's clock goes before it and every tag of the class are moved back by it: doubles near 1e15 have
   * steps of 0.125, more than a weight-1000 tenant's cheapest increment (17 / 1000), whose tag then stops moving.
   */
  static final double REBASE_AT = 0x1p32;

  FairQueue(int classes) {
    this.classes = classes;
    this.clock = new double[classes];
    this.sweepAt = new int[classes];
    java.util.Arrays.fill(sweepAt, 64);
    for (int i = 0; i < classes; i++) {
      active.add(new ArrayList<>());
      lanes.add(new HashMap<>());
    }
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  /**
   * Queues {@code item} of {@code tenant} in class {@code rank} (clamped to the classes), costing {@code cost / weight};
   * it may start up to {@code burst} times that before the class's clock if its tenant's last item finished before.
   */
  Entry<T> add(T item, int rank, String tenant, int weight, double cost, int burst) {
    int r = Math.max(0, Math.min(classes - 1, rank));
    Map<String, Lane> ofClass = lanes.get(r);
    Lane lane = ofClass.get(tenant);
    if (lane == null) {
      if (ofClass.size() >= sweepAt[r]) sweep(r);
      lane = new Lane(tenant, r);
      ofClass.put(tenant, lane);
    }
    double increment = Math.max(1e-9, cost) / Math.max(1, weight);
    double credit = Math.max(0, burst) * increment;
    double tag = Math.max(clock[r] - credit, lane.lastTag) + increment;
    lane.lastTag = tag;
    lane.lastCredit = credit;
    Entry<T> e = new Entry<>(item, lane, increment, tag);
    if (lane.waiting.isEmpty()) active.get(r).add(lane);
    lane.waiting.add(e);
    size++;
    return e;
  }

  /**
   * The next item to leave among those {@code eligible} (whose engines can take one more), removed; null when none of
   * the waiting ones is. An item that may not leave yet keeps its place: the first eligible one of its tenant goes in
   * its stead, at the head's start (so held items cost their tenant nothing in the fair order), and the items it passed
   * move back by its cost. A class whose waiting items are all held lets the next class go; a class not {@code open}
   * is passed over whole.
   */
  @SuppressWarnings("unchecked")
  Entry<T> poll(java.util.function.IntPredicate open, java.util.function.Predicate<? super T> eligible) {
    for (int r = 0; r < classes; r++) {
      List<Lane> candidates = active.get(r);
      if (candidates.isEmpty() || !open.test(r)) continue;
      Lane best = null;
      Entry<T> bestEntry = null;
      double bestTag = 0;
      for (Lane lane : candidates) {
        Entry<T> first = firstEligible(lane, eligible);
        if (first == null) continue;
        // its start, or the start its tenant's head has when the head may not leave yet
        Entry<?> head = lane.waiting.peekFirst();
        double tag = head.tag - head.increment;
        // on equal starts the tenant with less waiting goes first: a newcomer is not behind a backlog's head
        if (best == null || tag < bestTag || tag == bestTag && lane.waiting.size() < best.waiting.size()) {
          best = lane;
          bestEntry = first;
          bestTag = tag;
        }
      }
      if (bestEntry == null) continue;
      if (best.waiting.peekFirst() == bestEntry) {
        best.waiting.pollFirst();
      } else {
        for (Entry<?> passed : best.waiting) {
          if (passed == bestEntry) break;
          passed.tag += bestEntry.increment;
        }
        best.waiting.remove(bestEntry);
      }
      clock[r] = Math.max(clock[r], bestTag);
      if (best.waiting.isEmpty()) forget(best);
      if (clock[r] > REBASE_AT) rebase(r);
      size--;
      return bestEntry;
    }
    return null;
  }

  @SuppressWarnings("unchecked")
  private Entry<T> firstEligible(Lane lane, java.util.function.Predicate<? super T> eligible) {
    for (Entry<?> e : lane.waiting) {
      if (eligible.test((T) e.item)) return (Entry<T>) e;
    }
    return null;
  }

  /** How many waiting items {@code which} holds for. */
  @SuppressWarnings("unchecked")
  int count(java.util.function.Predicate<? super T> which) {
    int n = 0;
    for (List<Lane> lanesOfClass : active) {
      for (Lane lane : lanesOfClass) {
        for (Entry<?> e : lane.waiting) if (which.test((T) e.item)) n++;
      }
    }
    return n;
  }

  /**
   * Removes {@code e} if it still waits (its client left, its wait timed out); returns whether it did. It used no turn,
   * so its tenant is not charged for it: the items queued after it in its lane move up by its cost.
   */
  boolean remove(Entry<T> e) {
    Lane lane = e.lane;
    boolean after = false;
    boolean found = false;
    for (Entry<?> other : lane.waiting) {
      if (other == e) {
        found = true;
        after = true;
      } else if (after) {
        other.tag -= e.increment;
      }
    }
    if (!found) return false;
    lane.waiting.remove(e);
    lane.lastTag -= e.increment;
    if (lane.waiting.isEmpty()) forget(lane);
    size--;
    return true;
  }

  /**
   * The newest item of the tenant with the most items waiting, removed, when that tenant has more waiting than
   * {@code tenant} would with one more (longest-queue drop: a full queue sheds the flood first); null otherwise.
   */
  @SuppressWarnings("unchecked")
  Entry<T> shedFor(String tenant) {
    Lane longest = null;
    Map<String, Integer> byTenant = sizesByTenant();
    int mine = byTenant.getOrDefault(tenant, 0);
    String flood = null;
    int most = mine + 1;
    for (Map.Entry<String, Integer> t : byTenant.entrySet()) {
      if (t.getValue() > most) {
        most = t.getValue();
        flood = t.getKey();
      }
    }
    if (flood == null) return null;
    // its newest item of its lowest class
    for (int r = classes - 1; r >= 0 && longest == null; r--) {
      for (Lane lane : active.get(r)) {
        if (lane.tenant.equals(flood)) longest = lane;
      }
    }
    Entry<T> e = (Entry<T>) longest.waiting.pollLast();
    longest.lastTag -= e.increment;
    if (longest.waiting.isEmpty()) forget(longest);
    size--;
    return e;
  }

  /** Items waiting per class, highest first. */
  int[] sizesByClass() {
    int[] sizes = new int[classes];
    for (int r = 0; r < classes; r++) for (Lane lane : active.get(r)) sizes[r] += lane.waiting.size();
    return sizes;
  }

  /** Items waiting per tenant. */
  Map<String, Integer> sizesByTenant() {
    Map<String, Integer> sizes = new HashMap<>();
    for (List<Lane> lanesOfClass : active) for (Lane lane : lanesOfClass) sizes.merge(lane.tenant, lane.waiting.size(), Integer::sum);
    return sizes;
  }

  /**
   * An emptied lane leaves the active list; its tag is kept until the class clock is past it by its credit: a tenant
   * whose lane was dropped as soon as its tag was behind the clock came back with a full burst at once, and one that
   * queued one item at a time (its next arriving as its last got its turn) took every turn.
   */
  private void forget(Lane lane) {
    active.get(lane.rank).remove(lane);
    if (creditFull(lane)) lanes.get(lane.rank).remove(lane.tenant);
  }

  private boolean creditFull(Lane lane) {
    return lane.waiting.isEmpty() && lane.lastTag + lane.lastCredit <= clock[lane.rank];
  }

  /** Drops class {@code r}'s idle lanes whose credit is full again; the next sweep waits for twice as many lanes. */
  private void sweep(int r) {
    Map<String, Lane> ofClass = lanes.get(r);
    ofClass.values().removeIf(this::creditFull);
    sweepAt[r] = Math.max(64, 2 * ofClass.size());
  }

  /** Moves class {@code r}'s clock and every tag of it back by the clock: the order and every credit are unchanged. */
  private void rebase(int r) {
    double by = clock[r];
    for (Lane lane : lanes.get(r).values()) {
      lane.lastTag -= by;
      for (Entry<?> e : lane.waiting) e.tag -= by;
    }
    clock[r] = 0;
  }
}
