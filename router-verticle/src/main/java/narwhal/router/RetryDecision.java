package narwhal.router;

/**
 * Whether a failed attempt is retried (docs/errors.md): the conditions in their contractual order, the first
 * that fails named as {@code retry_reason}; {@code allowed} when all hold.
 */
final class RetryDecision {
  public static final String ALLOWED = "allowed";

  private RetryDecision() {
  }

  /** The inputs, as facts of the failed attempt and the request. */
  public record Facts(boolean dispatched, boolean outputStarted, int attempt, int maxAttempts, boolean transientFault,
                      long backoffMs, long remainingMs, boolean creditAvailable) {
  }

  public static String decide(Facts f) {
    if (!f.dispatched()) return "not_dispatched";
    if (f.outputStarted()) return "output_started";
    if (f.attempt() >= f.maxAttempts()) return "attempt_limit";
    if (!f.transientFault()) return "non_transient";
    if (f.backoffMs() >= f.remainingMs()) return "original_deadline";
    if (!f.creditAvailable()) return "shared_budget";
    return ALLOWED;
  }

  /** Full-jitter backoff: {@code U[0,1) × min(cap, base × 2^(attempt−1))}. */
  public static long backoffMs(double uniform, int attempt, long baseMs, long capMs) {
    double ceiling = Math.min((double) capMs, baseMs * Math.pow(2, attempt - 1));
    return (long) Math.floor(uniform * ceiling);
  }
}
