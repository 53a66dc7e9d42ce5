package narwhal.common.bus;

import java.util.Collection;

/**
 * Rendezvous (highest random weight) hashing: every replica that sees the same members ranks them the same way for a
 * key, without talking, and a member's arrival or departure moves only the keys it wins or held. Used to give each
 * engine one owner among the live router replicas (its load readings, its liveness sweep) and to place a prefix never
 * seen where every replica would.
 */
public final class Rendezvous {
  private Rendezvous() {
  }

  /** FNV-1a over the string's characters: a stable 64-bit hash of a key or a member. */
  public static long hash(String s) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < s.length(); i++) {
      h ^= s.charAt(i);
      h *= 0x100000001b3L;
    }
    return h;
  }

  /** A member's weight for a key, both hashed: SplitMix64's finalizer over their combination, well spread. */
  public static long weight(long key, long member) {
    long z = key ^ member;
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  /**
   * Where {@code self} stands in {@code key}'s order over {@code members} (0: the owner; 1: the first to take over when
   * the owner goes quiet; …); 0 when {@code self} is not among them.
   */
  public static int rank(String key, Collection<String> members, String self) {
    if (!members.contains(self)) return 0;
    long k = hash(key);
    long mine = weight(k, hash(self));
    int before = 0;
    for (String member : members) {
      if (member.equals(self)) continue;
      long theirs = weight(k, hash(member));
      if (Long.compareUnsigned(theirs, mine) > 0 || theirs == mine && member.compareTo(self) < 0) before++;
    }
    return before;
  }
}
