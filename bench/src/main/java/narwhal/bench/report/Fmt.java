package narwhal.bench.report;

import narwhal.bench.load.LatencyHistogram;

import java.util.Locale;

/** Number formatting for tables: milliseconds, rates, ratios, sizes. */
public final class Fmt {
  private Fmt() {
  }

  /** Nanoseconds as milliseconds with 2 decimals ({@code 1.23}); {@code —} when negative. */
  public static String ms(long nanos) {
    return nanos < 0 ? "—" : String.format(Locale.ROOT, "%.2f", nanos / 1e6);
  }

  /** Percentile {@code q} of a histogram in ms, or {@code —} when nothing was recorded. */
  public static String pct(LatencyHistogram h, double q) {
    return h.count() == 0 ? "—" : ms(h.percentile(q));
  }

  /** A signed difference of nanoseconds as milliseconds ({@code +0.41}). */
  public static String deltaMs(long nanos) {
    return String.format(Locale.ROOT, "%+.2f", nanos / 1e6);
  }

  public static String num(double v, int decimals) {
    return String.format(Locale.ROOT, "%." + decimals + "f", v);
  }

  /** A fraction as a percentage, {@code 2.5 %}. */
  public static String percent(double fraction, int decimals) {
    return num(100 * fraction, decimals) + " %";
  }

  /** A rate with no decimals above 100, one below. */
  public static String rate(double v) {
    return v >= 100 ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.1f", v);
  }

  /** {@code 0.83×}. */
  public static String ratio(double v) {
    return Double.isFinite(v) ? String.format(Locale.ROOT, "%.2f×", v) : "—";
  }

  public static String mib(long bytes) {
    return bytes < 0 ? "—" : String.format(Locale.ROOT, "%.0f", bytes / 1048576.0);
  }

  public static double ratio(double a, double b) {
    return b == 0 ? Double.NaN : a / b;
  }
}
