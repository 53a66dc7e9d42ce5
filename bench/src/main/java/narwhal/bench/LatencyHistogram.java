package narwhal.bench;

import io.vertx.core.json.JsonObject;

import java.util.Arrays;

/**
 * A log-linear histogram of non-negative durations in nanoseconds (the HdrHistogram layout, simplified):
 * values below 128 ns are exact, larger ones fall into 128 sub-buckets per power of two, so a reported
 * percentile is within 1/128 (0.8 %) of the recorded value. Min, max, count and sum are exact.
 * Not thread-safe: one owner records, or the owner synchronises ({@link RunStats} does).
 */
public final class LatencyHistogram {
  static final int SUB_BITS = 7;
  static final int SUB_COUNT = 1 << SUB_BITS;
  private static final int BUCKETS = (63 - SUB_BITS + 1) * SUB_COUNT + SUB_COUNT;

  private final long[] counts = new long[BUCKETS];
  private long count;
  private long sum;
  private long min = Long.MAX_VALUE;
  private long max = Long.MIN_VALUE;

  public void record(long nanos) {
    long v = Math.max(0, nanos);
    counts[index(v)]++;
    count++;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }

  public void merge(LatencyHistogram other) {
    for (int i = 0; i < BUCKETS; i++) counts[i] += other.counts[i];
    count += other.count;
    sum += other.sum;
    if (other.count > 0) {
      min = Math.min(min, other.min);
      max = Math.max(max, other.max);
    }
  }

  public void reset() {
    Arrays.fill(counts, 0);
    count = 0;
    sum = 0;
    min = Long.MAX_VALUE;
    max = Long.MIN_VALUE;
  }

  public long count() {
    return count;
  }

  public long min() {
    return count == 0 ? 0 : min;
  }

  public long max() {
    return count == 0 ? 0 : max;
  }

  public double mean() {
    return count == 0 ? 0 : (double) sum / count;
  }

  /**
   * The value at percentile {@code q} (0–100): the smallest recorded value v such that at least q % of the
   * recordings are ≤ v, up to the bucket precision; 0 when empty. Clamped to the exact min and max.
   */
  public long percentile(double q) {
    if (count == 0) return 0;
    if (q <= 0) return min;
    if (q >= 100) return max;
    long rank = (long) Math.ceil(q / 100.0 * count);
    if (rank < 1) rank = 1;
    long seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
      seen += counts[i];
      if (seen >= rank) return Math.max(min, Math.min(max, representative(i)));
    }
    return max;
  }

  /** Percentile in milliseconds. */
  public double percentileMs(double q) {
    return percentile(q) / 1e6;
  }

  /** count, min, mean, p50, p90, p99, p99.9, max — durations in milliseconds. */
  public JsonObject toJson() {
    return new JsonObject().put("count", count).put("min_ms", min() / 1e6).put("mean_ms", mean() / 1e6)
        .put("p50_ms", percentileMs(50)).put("p90_ms", percentileMs(90)).put("p99_ms", percentileMs(99))
        .put("p999_ms", percentileMs(99.9)).put("max_ms", max() / 1e6);
  }

  static int index(long v) {
    if (v < SUB_COUNT) return (int) v;
    int exponent = 63 - Long.numberOfLeadingZeros(v);
    int shift = exponent - SUB_BITS;
    int group = shift + 1;
    int sub = (int) (v >>> shift) - SUB_COUNT;
    return group * SUB_COUNT + sub;
  }

  /** The middle of bucket {@code index}'s value range. */
  static long representative(int index) {
    if (index < SUB_COUNT) return index;
    int group = index / SUB_COUNT;
    int sub = index % SUB_COUNT;
    int shift = group - 1;
    long lower = ((long) SUB_COUNT + sub) << shift;
    long width = 1L << shift;
    return lower + (width - 1) / 2;
  }
}
