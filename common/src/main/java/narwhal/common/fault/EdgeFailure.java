package narwhal.common.fault;

/**
 * Why the router itself refused or ended a request, not an engine ({@link FaultKind} names those): the journal row's
 * {@code reason} and the metrics' {@code reason} label for the errors of the router's edge (docs/errors.md) and for the
 * endings no error is sent for (a client that went away, a batch's prompt abandoned).
 */
public enum EdgeFailure {
  INVALID_REQUEST, CONTEXT_LENGTH, METHOD_NOT_ALLOWED, CORS_REJECTED, EXPECTATION_FAILED, MODEL_NOT_FOUND,
  RESPONSE_NOT_FOUND, NOT_FOUND, REQUEST_TOO_LARGE, RECEIVE_TIMEOUT, INVALID_API_KEY, IN_FLIGHT_LIMIT, NO_ENGINE,
  SHUTTING_DOWN, GRACEFUL_TIMEOUT, FLEET_HOLD, REQUEST_DEADLINE, INTERNAL, CLIENT_DISCONNECTED, BATCH_FAILED,
  QUOTA_REQUESTS, QUOTA_TOKENS, QUOTA_CONCURRENT, QUEUE_TIMEOUT, QUEUE_FULL;

  private final String wire = name().toLowerCase(java.util.Locale.ROOT);

  public String wireName() {
    return wire;
  }
}
