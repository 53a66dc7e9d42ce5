package narwhal.common.fault;

/**
 * Whether a failed attempt is retried (docs/errors.md): {@link #ALLOWED}, or the first rule that forbade it, in the
 * order the rules are checked. The journal's {@code attempt_failures[].retry_reason} and the trace's
 * {@code narwhal.retry_reason}.
 */
public enum RetryReason {
  ALLOWED, NOT_DISPATCHED, OUTPUT_STARTED, ATTEMPT_LIMIT, NON_TRANSIENT, ORIGINAL_DEADLINE, SHARED_BUDGET;

  private final String wire = name().toLowerCase(java.util.Locale.ROOT);

  public String wireName() {
    return wire;
  }
}
