package narwhal.common.bus;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.shareddata.Shareable;

/**
 * Placement's table as a router on the same node reaches it: the same decision {@link Addresses#PLACEMENT_RESERVE}
 * answers, taken in the caller's thread instead of a bus round trip to the placement verticle's (two of those per
 * request were a tenth of a short request's CPU). Published by the placement verticle in the node's local shared
 * data while it runs; the engine states behind it still arrive as bus events. Failures are the bus's reply failures
 * ({@link Failures#NO_ENGINE}, {@link Failures#FLEET_HOLD}) as a {@code ReplyException}.
 */
public interface LocalPlacement extends Shareable {
  String MAP = "narwhal.placement";
  String KEY = "table";

  Future<Reservation> reserve(ReserveRequest request);

  void release(Reservation reservation);

  /**
   * The engines' queues for {@code model} under {@code queueMax} requests waiting each ({@code flow.engine_queue_max};
   * waiting for a place in the batch, not for a KV transfer):
   * {@code saturated} when every serving engine of the prefill phase, or every one of the decode phase, has at least
   * {@code queueMax} waiting by its last fresh reading and the one before (one reading can catch a queue full for a
   * moment); {@code starts}, how many more their queues take: per phase the
   * sum over its engines of {@code queueMax} less what waits on each, the smaller of the two phases. An engine without
   * a fresh reading is not known to be full: its phase is neither saturated nor bounded. {@code asOfMs}: the oldest
   * reading counted (epoch ms): what a caller started since may not be in it yet. Answered from a verdict at most a few
   * milliseconds old.
   */
  Room room(String model, int queueMax);

  /** Whether the engine still takes new legs: in the fleet and serving (a reload or an operator may take it out). */
  boolean takes(String iid);

  /** {@link #room}'s answer ({@code starts} {@link Integer#MAX_VALUE}: no bound), as of the readings since {@code asOfMs}. */
  record Room(boolean saturated, int starts, long asOfMs) {
    public static final Room UNBOUNDED = new Room(false, Integer.MAX_VALUE, -1);

    public boolean bounded() {
      return starts != Integer.MAX_VALUE;
    }
  }

  /** Placement's readiness as of its last engine-state, fleet or fleet-hold change (any thread may read it). */
  Readiness readiness();

  /** The placement running on this node, or null when none runs here. */
  static LocalPlacement of(Vertx vertx) {
    return (LocalPlacement) vertx.sharedData().getLocalMap(MAP).get(KEY);
  }
}
