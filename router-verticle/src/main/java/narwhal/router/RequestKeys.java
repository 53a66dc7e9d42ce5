package narwhal.router;

/**
 * The routing-context keys the edge's handlers share for one request ({@code rc.put}, {@code rc.get}).
 */
final class RequestKeys {
  /** The router's id of the request, in its journal row and its engine legs ({@link ReceiveGuard#headArrived}). */
  static final String RID = "narwhal.rid";
  /** The timer bounding how long the body may take to arrive ({@link ReceiveGuard#declaredSize}). */
  static final String RECEIVE_TIMER = "narwhal.receive.timer";
  /** When the request's head arrived, wall clock and monotonic ({@link EdgeRefusal#arrived}). */
  static final String ARRIVED = "narwhal.arrived";
  static final String ARRIVED_NANOS = "narwhal.arrived.nanos";

  private RequestKeys() {
  }
}
