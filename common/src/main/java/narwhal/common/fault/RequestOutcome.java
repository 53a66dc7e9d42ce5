package narwhal.common.fault;

/**
 * How a client request ended: the journal row's {@code terminal} (docs/operations.md#journal) and the outcome counters
 * ({@code narwhal_requests_*}, docs/metrics.md). One per request, whatever its ending.
 */
public enum RequestOutcome {
  COMPLETED, FAILED, EXPIRED, CANCELLED, REJECTED, INVALID;

  private final String wire = name().toLowerCase(java.util.Locale.ROOT);

  public String wireName() {
    return wire;
  }
}
