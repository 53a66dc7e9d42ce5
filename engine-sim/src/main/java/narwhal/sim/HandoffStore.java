package narwhal.sim;

import java.time.Clock;
import java.time.Instant;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * KV blocks a producer keeps for a decode engine to pull, keyed by {@code remote_request_id},
 * each under a lease measured on the engine's clock (vLLM's {@code kv_lease_duration}). A pull
 * frees them; an expired lease frees them and counts an expired request. Either way the prompt blocks join the
 * producer's prefix cache as they are released. Thread-safe.
 */
final class HandoffStore {

  enum PullResult { PULLED, UNKNOWN, ENGINE_MISMATCH }

  private final Clock clock;
  private final BlockPool pool;
  private final EngineStats stats;
  private final String engineId;
  private final long leaseSeconds;
  private final Map<String, Handoff> held = new LinkedHashMap<>();

  HandoffStore(Clock clock, BlockPool pool, EngineStats stats, String engineId, long leaseSeconds) {
    this.clock = clock;
    this.pool = pool;
    this.stats = stats;
    this.engineId = engineId;
    this.leaseSeconds = leaseSeconds;
  }

  /**
   * Holds these blocks for {@code remoteRequestId}, {@code hashes} being the prefix-cache keys of its full prompt
   * blocks (registered on release); {@code expireNow} models an instantly lapsed lease.
   */
  synchronized void hold(String remoteRequestId, int[] blocks, long[] hashes, boolean expireNow) {
    Instant now = clock.instant();
    Instant expiry = expireNow ? now : leaseSeconds == 0 ? null : now.plusSeconds(leaseSeconds);
    held.put(remoteRequestId, new Handoff(blocks, hashes, expiry));
    stats.handoffsCreated.incrementAndGet();
    if (expireNow) {
      sweep();
    }
  }

  /** The side channel's read-and-free: succeeds only for a held, unexpired handoff of this engine. */
  synchronized PullResult pull(String requestedEngineId, String remoteRequestId) {
    sweep();
    if (!engineId.equals(requestedEngineId)) {
      return PullResult.ENGINE_MISMATCH;
    }
    Handoff handoff = remoteRequestId == null ? null : held.remove(remoteRequestId);
    if (handoff == null) {
      return PullResult.UNKNOWN;
    }
    release(handoff);
    stats.handoffsFreed.incrementAndGet();
    return PullResult.PULLED;
  }

  /** Frees every handoff whose lease has lapsed; returns how many expired. */
  synchronized int sweep() {
    Instant now = clock.instant();
    int expired = 0;
    for (Iterator<Handoff> it = held.values().iterator(); it.hasNext(); ) {
      Handoff handoff = it.next();
      if (handoff.expiry != null && !now.isBefore(handoff.expiry)) {
        it.remove();
        release(handoff);
        stats.handoffsExpired.incrementAndGet();
        expired++;
      }
    }
    return expired;
  }

  private void release(Handoff handoff) {
    for (int i = 0; i < handoff.hashes.length && i < handoff.blocks.length; i++) {
      pool.register(handoff.blocks[i], handoff.hashes[i]);
    }
    pool.free(handoff.blocks);
  }

  synchronized int held() {
    sweep();
    return held.size();
  }

  private static final class Handoff {
    final int[] blocks;
    final long[] hashes;
    final Instant expiry;

    Handoff(int[] blocks, long[] hashes, Instant expiry) {
      this.blocks = blocks;
      this.hashes = hashes;
      this.expiry = expiry;
    }
  }
}
