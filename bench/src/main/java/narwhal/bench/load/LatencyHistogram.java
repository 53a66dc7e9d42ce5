package narwhal.bench.load;

import io.vertx.core.json.JsonObject;
import org.HdrHistogram.Histogram;

/**
 * Non-negative durations in nanoseconds, in an HdrHistogram with 2 significant digits (a reported percentile is within
 * 1/128, 0.8 %, of the recorded value; it resizes itself to any range). Min, max, count and sum are kept exact beside
 * it. Not thread-safe: one owner records, or the owner synchronises ({@link RunStats} does).
 */
public final class LatencyHistogram {
  private final Histogram histogram = new Histogram(2);
  private long sum;
  private long min = Long.MAX_VALUE;
  private long max = Long.MIN_VALUE;

  public void record(long nanos) {
    long v = Math.max(0, nanos);
    histogram.recordValue(v);
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }

  public void merge(LatencyHistogram other) {
    histogram.add(other.histogram);
    sum += other.sum;
    if (other.count() > 0) {
      min = Math.min(min, other.min);
      max = Math.max(max, other.max);
    }
  }

  public void reset() {
    histogram.reset();
    sum = 0;
    min = Long.MAX_VALUE;
    max = Long.MIN_VALUE;
  }

  public long count() {
    return histogram.getTotalCount();
  }

  public long min() {
    return count() == 0 ? 0 : min;
  }

  public long max() {
    return count() == 0 ? 0 : max;
  }

  public double mean() {
    return count() == 0 ? 0 : (double) sum / count();
  }

  /**
   * The value at percentile {@code q} (0–100, not a fraction): the smallest recorded value v such that at least q % of
   * the recordings are ≤ v (nearest rank), up to the histogram's precision; 0 when empty. Clamped to the exact min
   * and max.
   */
  public long percentile(double q) {
    if (count() == 0) return 0;
    if (q <= 0) return min;
    if (q >= 100) return max;
    return Math.max(min, Math.min(max, histogram.getValueAtPercentile(q)));
  }

  /** How many recorded values are at most {@code nanos}. */
  public long countAtMost(long nanos) {
    if (count() == 0 || nanos < min) return 0;
    return histogram.getCountBetweenValues(0, Math.min(nanos, histogram.getHighestTrackableValue()));
  }

  /** Percentile in milliseconds. */
  public double percentileMs(double q) {
    return percentile(q) / 1e6;
  }

  /** count, min, mean, p50, p90, p99, p99.9, max — durations in milliseconds. */
  public JsonObject toJson() {
    return new JsonObject().put("count", count()).put("min_ms", min() / 1e6).put("mean_ms", mean() / 1e6)
        .put("p50_ms", percentileMs(50)).put("p90_ms", percentileMs(90)).put("p99_ms", percentileMs(99))
        .put("p999_ms", percentileMs(99.9)).put("max_ms", max() / 1e6);
  }
}
