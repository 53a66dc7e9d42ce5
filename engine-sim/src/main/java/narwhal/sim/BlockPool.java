package narwhal.sim;

import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * The engine's KV cache as numbered blocks, with vLLM's automatic prefix caching: running requests and held
 * handoffs hold blocks (reference counted, so requests share a cached prefix), a full prompt block can be
 * registered under its chained hash, and a block no one holds keeps its hash until it is evicted, least
 * recently freed first, when a new allocation needs room. An allocation that does not fit is the simulator's
 * "queue full". Thread-safe.
 */
final class BlockPool {

  /** Blocks given to one request: its cached prefix (shared) first, then fresh ones. */
  record Allocation(int[] blocks, int cachedBlocks) {
  }

  private final int total;
  /** Blocks held (references above zero) or keeping a cached hash: everything not plainly free. */
  private final BitSet taken;
  private final Map<Long, Integer> byHash = new HashMap<>();
  /** Cached blocks no one holds, least recently freed first: the eviction order. */
  private final LinkedHashSet<Integer> evictable = new LinkedHashSet<>();
  private int[] refs = new int[64];
  private long[] hashes = new long[64];
  private final BitSet hashed = new BitSet();
  private int inUse;
  private long evictions;

  BlockPool(int total) {
    this.total = total;
    this.taken = new BitSet(Math.min(total, 1 << 16));
  }

  /** Allocates {@code n} fresh blocks, or returns null when fewer are free (free includes evictable cached blocks). */
  synchronized int[] allocate(int n) {
    Allocation a = allocate(new long[0], 0, n);
    return a == null ? null : a.blocks;
  }

  /**
   * Allocates {@code needed} blocks of which the first are the cached blocks of {@code prefix} (at most
   * {@code maxHits} of them, stopping at the first hash not cached), shared with whoever else holds them;
   * null when the rest does not fit.
   */
  synchronized Allocation allocate(long[] prefix, int maxHits, int needed) {
    int hits = 0;
    int evictableHits = 0;
    int limit = Math.min(Math.min(prefix.length, maxHits), needed);
    int[] hitIds = new int[limit];
    for (; hits < limit; hits++) {
      Integer id = byHash.get(prefix[hits]);
      if (id == null) {
        break;
      }
      hitIds[hits] = id;
      if (refs[id] == 0) {
        evictableHits++;
      }
    }
    int fresh = needed - hits;
    if (fresh > total - inUse - evictableHits) {
      return null;
    }
    int[] ids = new int[needed];
    for (int i = 0; i < hits; i++) {
      hold(hitIds[i]);
      ids[i] = hitIds[i];
    }
    for (int i = hits; i < needed; i++) {
      ids[i] = takeFresh();
      hold(ids[i]);
    }
    return new Allocation(ids, hits);
  }

  /** Drops one reference to each block; a block no one holds stays cached (evictable) when it has a hash. */
  synchronized void free(int[] ids) {
    for (int id : ids) {
      if (id < 0 || id >= refs.length || refs[id] == 0) {
        continue;
      }
      if (--refs[id] == 0) {
        inUse--;
        if (hashed.get(id)) {
          evictable.add(id);
        } else {
          taken.clear(id);
        }
      }
    }
  }

  /**
   * Looks the prefix up again for an allocation that holds {@code cached} cached blocks first: each next block whose
   * hash is cached now replaces the allocation's fresh block in {@code ids} (shared, the fresh one freed). Returns the
   * cached blocks now leading the allocation.
   */
  synchronized int rehit(int[] ids, long[] prefix, int cached, int maxHits) {
    int limit = Math.min(Math.min(prefix.length, maxHits), ids.length);
    int hits = cached;
    for (; hits < limit; hits++) {
      Integer id = byHash.get(prefix[hits]);
      if (id == null) {
        break;
      }
      if (id != ids[hits]) {
        hold(id);
        free(new int[] {ids[hits]});
        ids[hits] = id;
      }
    }
    return hits;
  }

  /** Registers a held block under a full block's chained hash, unless another block already caches that hash. */
  synchronized void register(int id, long hash) {
    if (id < 0 || id >= refs.length || refs[id] == 0 || hashed.get(id) || byHash.containsKey(hash)) {
      return;
    }
    hashed.set(id);
    hashes[id] = hash;
    byHash.put(hash, id);
  }

  /** How many leading hashes of {@code prefix} are cached now. */
  synchronized int cachedPrefix(long[] prefix) {
    int n = 0;
    while (n < prefix.length && byHash.containsKey(prefix[n])) {
      n++;
    }
    return n;
  }

  synchronized int inUse() {
    return inUse;
  }

  /** Blocks holding a cached hash, held or not. */
  synchronized int cached() {
    return byHash.size();
  }

  synchronized long evictions() {
    return evictions;
  }

  int total() {
    return total;
  }

  private int takeFresh() {
    int id = taken.nextClearBit(0);
    if (id < total) {
      taken.set(id);
      grow(id);
      return id;
    }
    Iterator<Integer> lru = evictable.iterator();
    int victim = lru.next();
    lru.remove();
    unhash(victim);
    evictions++;
    return victim;
  }

  private void hold(int id) {
    if (refs[id]++ == 0) {
      inUse++;
      evictable.remove(id);
    }
  }

  private void unhash(int id) {
    if (hashed.get(id)) {
      hashed.clear(id);
      byHash.remove(hashes[id]);
    }
  }

  private void grow(int id) {
    if (id >= refs.length) {
      int size = (int) Math.min(total, Math.max(id + 1L, refs.length * 2L));
      refs = Arrays.copyOf(refs, size);
      hashes = Arrays.copyOf(hashes, size);
    }
  }
}
