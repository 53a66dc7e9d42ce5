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

  /** Placement's readiness as of its last engine-state, fleet or fleet-hold change (any thread may read it). */
  Readiness readiness();

  /** The placement running on this node, or null when none runs here. */
  static LocalPlacement of(Vertx vertx) {
    return (LocalPlacement) vertx.sharedData().getLocalMap(MAP).get(KEY);
  }
}
