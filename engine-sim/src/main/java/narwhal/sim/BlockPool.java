package narwhal.sim;

import java.util.BitSet;

/**
 * The engine's KV cache as numbered blocks: running requests and held handoffs allocate from it,
 * and an allocation that does not fit is the simulator's "queue full". Thread-safe.
 */
final class BlockPool {

  private final int total;
  private final BitSet used;
  private int inUse;

  BlockPool(int total) {
    this.total = total;
    this.used = new BitSet(total);
  }

  /** Allocates the {@code n} lowest free block ids, or returns null when fewer are free. */
  synchronized int[] allocate(int n) {
    if (n > total - inUse) {
      return null;
    }
    int[] ids = new int[n];
    int next = 0;
    for (int i = 0; i < n; i++) {
      next = used.nextClearBit(next);
      used.set(next);
      ids[i] = next++;
    }
    inUse += n;
    return ids;
  }

  synchronized void free(int[] ids) {
    for (int id : ids) {
      if (used.get(id)) {
        used.clear(id);
        inUse--;
      }
    }
  }

  synchronized int inUse() {
    return inUse;
  }

  int total() {
    return total;
  }
}
