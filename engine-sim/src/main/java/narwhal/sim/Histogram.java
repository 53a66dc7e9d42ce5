package narwhal.sim;

/** A Prometheus histogram with fixed upper bounds (cumulative buckets, sum and count), as vLLM declares its own. */
final class Histogram {

  /** vLLM's buckets of {@code vllm:time_to_first_token_seconds}. */
  static final double[] TTFT_BUCKETS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
    5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  /** vLLM's request latency buckets ({@code vllm:e2e_request_latency_seconds} and the other request phases). */
  static final double[] REQUEST_LATENCY_BUCKETS = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
    40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

  private final double[] bounds;
  private final long[] counts;
  private long count;
  private double sum;

  Histogram(double[] bounds) {
    this.bounds = bounds;
    this.counts = new long[bounds.length];
  }

  synchronized void observe(double value) {
    for (int i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        counts[i]++;
      }
    }
    count++;
    sum += value;
  }

  synchronized long count() {
    return count;
  }

  /** Appends the {@code _bucket}, {@code _count} and {@code _sum} samples; {@code labels} without braces. */
  synchronized void render(StringBuilder out, String name, String labels) {
    for (int i = 0; i < bounds.length; i++) {
      sample(out, name + "_bucket", labels + ",le=\"" + bounds[i] + "\"", counts[i]);
    }
    sample(out, name + "_bucket", labels + ",le=\"+Inf\"", count);
    sample(out, name + "_count", labels, count);
    sample(out, name + "_sum", labels, sum);
  }

  private static void sample(StringBuilder out, String name, String labels, double value) {
    out.append(name).append('{').append(labels).append("} ").append(value).append('\n');
  }
}
