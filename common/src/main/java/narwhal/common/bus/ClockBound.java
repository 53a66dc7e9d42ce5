package narwhal.common.bus;

/**
 * How far ahead of a replica's clock a time written by another replica may be (docs/operations.md#threat-model): a
 * version ({@code changed_ms}), a reading time ({@code read_at_ms}) or a lease end further ahead than
 * {@link #MAX_SKEW_MS} beyond what it may legitimately add is forged or from a broken clock, and a replica treats it as
 * absent; otherwise one write of {@code Long.MAX_VALUE} would win every comparison for good. The arithmetic on versions
 * saturates rather than wraps.
 */
public final class ClockBound {
  /** The clock skew tolerated between replicas (NTP keeps real ones within milliseconds). */
  public static final long MAX_SKEW_MS = 60_000;

  private ClockBound() {
  }

  /** Whether {@code stampMs} is further ahead of {@code nowMs} than the skew plus {@code allowanceMs} (a lease's length). */
  public static boolean ahead(long stampMs, long nowMs, long allowanceMs) {
    return stampMs > plus(plus(nowMs, MAX_SKEW_MS), allowanceMs);
  }

  public static boolean ahead(long stampMs, long nowMs) {
    return ahead(stampMs, nowMs, 0);
  }

  /** The version after {@code previousMs} at {@code nowMs}: {@code max(now, previous + 1)}, saturated. */
  public static long next(long nowMs, long previousMs) {
    return Math.max(nowMs, plus(previousMs, 1));
  }

  /** {@code a + b} for {@code b >= 0}, {@link Long#MAX_VALUE} instead of wrapping. */
  public static long plus(long a, long b) {
    long sum = a + b;
    return b >= 0 && sum < a ? Long.MAX_VALUE : sum;
  }
}
