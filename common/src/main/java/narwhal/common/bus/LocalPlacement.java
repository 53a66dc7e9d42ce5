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
   * How many more attempts of {@code model} the engines' queues take ({@code flow.engine_queue_max}): for the prefill
   * phase and the decode phase each, the sum over the serving engines that serve the model of {@code queueMax} less
   * the requests waiting by the engine's last reading (less the legs sent to it since); the smaller of the two. An
   * engine with nothing waiting, or without a fresh reading, takes any number (unknown is not full): so does its
   * phase. {@code version} changes with every reading or engine state placement applies, so a caller can count the
   * attempts it started against one answer. Answered from a verdict at most a few milliseconds old.
   */
  Room room(String model, int queueMax);

  /** {@link #room}'s answer: {@code starts} ({@link Integer#MAX_VALUE}: no bound), as of placement's {@code version}. */
  record Room(int starts, long version) {
    public static final Room UNBOUNDED = new Room(Integer.MAX_VALUE, -1);

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
