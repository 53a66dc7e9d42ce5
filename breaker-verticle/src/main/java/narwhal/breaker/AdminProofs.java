package narwhal.breaker;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.AdminProof;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Checks the {@link AdminProof}s of admin commands for one replica: a proof must verify with the configured token, be
 * fresh (its time within {@link AdminProof#FRESH_MS} of this replica's clock, either way) and not seen before. The
 * nonces of the proofs taken are remembered for as long as those proofs are fresh, at most {@link #CAPACITY} of them
 * (only verified proofs are remembered, so only a holder of the token can fill the book; a full book refuses).
 * Used on the event loop of the breaker only.
 */
final class AdminProofs {
  static final int CAPACITY = 10_000;
  static final String REPLAYED = "admin proof already used (a replayed command)";

  private record Seen(String nonce, long forgetAtMs) {
  }

  private final LongSupplier wallClockMs;
  private final Deque<Seen> order = new ArrayDeque<>();
  private final Set<String> nonces = new HashSet<>();

  AdminProofs(LongSupplier wallClockMs) {
    this.wallClockMs = wallClockMs;
  }

  /** Why {@code proof} is refused (a 401's message), or null when it is taken (its nonce is then remembered). */
  String refusal(String token, String command, JsonObject args, JsonObject proof) {
    if (token == null) return "admin commands other than state need a configured admin token";
    if (!AdminProof.verifies(token, command, args, proof)) return "admin token missing or wrong";
    long now = wallClockMs.getAsLong();
    long at = proof.getLong("at_ms");
    if (Math.abs(now - at) > AdminProof.FRESH_MS) {
      return "admin proof is stale: made at " + at + " ms, " + (now - at) / 1000 + " s from this replica's clock (at most "
          + AdminProof.FRESH_MS / 1000 + " s either way: check the clocks of the admin host and the replicas)";
    }
    forget(now);
    String nonce = proof.getString("nonce");
    if (nonces.contains(nonce)) return REPLAYED;
    if (nonces.size() >= CAPACITY) return "more than " + CAPACITY + " admin commands within " + AdminProof.FRESH_MS / 1000 + " s; try again later";
    nonces.add(nonce);
    order.addLast(new Seen(nonce, Math.max(now, at) + AdminProof.FRESH_MS));
    return null;
  }

  private void forget(long now) {
    while (!order.isEmpty() && order.peekFirst().forgetAtMs() < now) nonces.remove(order.removeFirst().nonce());
  }
}
