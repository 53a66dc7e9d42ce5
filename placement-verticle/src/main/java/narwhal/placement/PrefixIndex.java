package narwhal.placement;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which producers computed a prompt prefix lately, for {@code cache_aware} placement (docs/operations.md#placement): for
 * each prefix affinity, the {@link #HOMES} engines that took it most recently, newest first. The whole cluster fills it:
 * this replica's own placements ({@link #placed}), queued for the other replicas ({@link #drain}), and theirs
 * ({@link #learned}). Bounded: the least recently used prefix is forgotten first, and at most {@link #MAX_PENDING}
 * changes wait to be sent (a flood of unique prompts drops the oldest unsent, never blocks). A replica that starts or
 * comes back copies a peer's index ({@link #entries}, {@link #fill}). Not thread-safe: the placement table guards it.
 */
final class PrefixIndex {
  /** How many prefixes the index remembers. */
  static final int CAPACITY = 16_384;
  /** How many producers a prefix keeps: the one it spilled to, and the one before, both hold its blocks. */
  static final int HOMES = 2;
  /** How many own placements wait at most for the next exchange. */
  static final int MAX_PENDING = 4_096;

  private final Map<String, String[]> homes = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, String[]> eldest) {
      return size() > CAPACITY;
    }
  };
  private final Map<String, String> pending = new LinkedHashMap<>(256, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
      return size() > MAX_PENDING;
    }
  };

  /** The engines that computed {@code affinity} lately, newest first; empty when none is known. */
  List<String> homes(String affinity) {
    String[] known = homes.get(affinity);
    if (known == null) return List.of();
    List<String> out = new ArrayList<>(HOMES);
    for (String iid : known) if (iid != null) out.add(iid);
    return out;
  }

  /** This replica placed {@code affinity} on {@code iid}: remembered, and queued for the other replicas. */
  void placed(String affinity, String iid) {
    if (remember(affinity, iid)) pending.put(affinity, iid);
  }

  /** Another replica placed {@code affinity} on {@code iid}. */
  void learned(String affinity, String iid) {
    remember(affinity, iid);
  }

  /**
   * A peer's entry, its homes newest first: taken whole (in that order) when this index does not know the prefix; a
   * prefix it knows keeps its homes, placed here or learned by exchange while the snapshot was on its way. Whether
   * it was taken. A full index takes none: a peer's prefix of unknown age never pushes out one this replica knows
   * (a replica that comes back full keeps its own, and learns the rest by exchange as they are placed again).
   */
  boolean fill(String affinity, List<String> newestFirst) {
    if (newestFirst.isEmpty() || homes.size() >= CAPACITY || homes.containsKey(affinity)) return false;
    homes.put(affinity, new String[] {newestFirst.get(0), newestFirst.size() > 1 ? newestFirst.get(1) : null});
    return true;
  }

  /** Every prefix with its homes ({@code [affinity, newest, older?]}), least recently used first; the order is kept. */
  List<String[]> entries() {
    List<String[]> out = new ArrayList<>(homes.size());
    homes.forEach((affinity, known) -> out.add(known[1] == null ? new String[] {affinity, known[0]}
        : new String[] {affinity, known[0], known[1]}));
    return out;
  }

  /** The own placements not sent yet, in the order they were made, each prefix once; the queue is emptied. */
  Map<String, String> drain() {
    if (pending.isEmpty()) return Map.of();
    Map<String, String> out = new LinkedHashMap<>(pending);
    pending.clear();
    return out;
  }

  /** Forgets {@code iid} as a home of every prefix: a re-pointed or removed engine holds none of their blocks. */
  void forget(String iid) {
    Iterator<Map.Entry<String, String[]>> it = homes.entrySet().iterator();
    while (it.hasNext()) {
      String[] known = it.next().getValue();
      if (iid.equals(known[1])) known[1] = null;
      if (iid.equals(known[0])) {
        known[0] = known[1];
        known[1] = null;
      }
      if (known[0] == null) it.remove();
    }
    pending.values().removeIf(iid::equals);
  }

  int size() {
    return homes.size();
  }

  /** Puts {@code iid} first among the prefix's homes; whether that changed anything. */
  private boolean remember(String affinity, String iid) {
    String[] known = homes.get(affinity);
    if (known == null) {
      homes.put(affinity, new String[] {iid, null});
      return true;
    }
    if (iid.equals(known[0])) return false;
    known[1] = known[0];
    known[0] = iid;
    return true;
  }
}
