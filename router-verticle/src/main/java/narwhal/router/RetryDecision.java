package narwhal.router;

import narwhal.common.fault.RetryReason;

/**
 * Whether a failed attempt is retried (docs/errors.md): the conditions in their contractual order, the first
 * that fails named as {@code retry_reason}; {@link RetryReason#ALLOWED} when all hold.
 */
final class RetryDecision {
  private RetryDecision() {
  }

  /** The inputs, as facts of the failed attempt and the request. */
  public record Facts(boolean dispatched, boolean outputStarted, int attempt, int maxAttempts, boolean transientFault,
                      long backoffMs, long remainingMs, boolean creditAvailable) {
  }

  public static RetryReason decide(Facts f) {
    if (!f.dispatched()) return RetryReason.NOT_DISPATCHED;
    if (f.outputStarted()) return RetryReason.OUTPUT_STARTED;
    if (f.attempt() >= f.maxAttempts()) return RetryReason.ATTEMPT_LIMIT;
    if (!f.transientFault()) return RetryReason.NON_TRANSIENT;
    if (f.backoffMs() >= f.remainingMs()) return RetryReason.ORIGINAL_DEADLINE;
    if (!f.creditAvailable()) return RetryReason.SHARED_BUDGET;
    return RetryReason.ALLOWED;
  }

  /** Full-jitter backoff: {@code U[0,1) × min(cap, base × 2^(attempt−1))}. */
  public static long backoffMs(double uniform, int attempt, long baseMs, long capMs) {
    double ceiling = Math.min((double) capMs, baseMs * Math.pow(2, attempt - 1));
    return (long) Math.floor(uniform * ceiling);
  }
}
