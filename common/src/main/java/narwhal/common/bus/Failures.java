package narwhal.common.bus;

/** Reply-failure codes carried by {@code Message.fail(code, message)}; the HTTP edge maps them once. */
public final class Failures {
  /** No engine can take the phase now. */
  public static final int NO_ENGINE = 503;
  /** No engine of the fleet serves the model (or adapter) the request names. */
  public static final int MODEL_NOT_FOUND = 404;
  /** The fleet is held by the whole-wave policy. */
  public static final int FLEET_HOLD = 423;
  /** A bus message that does not parse. */
  public static final int BAD_MESSAGE = 400;
  /** Missing or wrong admin token. */
  public static final int UNAUTHORIZED = 401;
  /** A cluster request reached the replica that sent it (ask again: the bus picks another member in turn). */
  public static final int OWN_REPLICA = 409;

  private Failures() {
  }
}
