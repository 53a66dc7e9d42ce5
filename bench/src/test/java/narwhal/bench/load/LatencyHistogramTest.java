package narwhal.bench.load;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LatencyHistogramTest {

  @Test
  void emptyHistogramReportsZeros() {
    LatencyHistogram h = new LatencyHistogram();
    assertEquals(0, h.count());
    assertEquals(0, h.percentile(50));
    assertEquals(0, h.min());
    assertEquals(0, h.max());
    assertEquals(0.0, h.mean());
  }

  @Test
  void smallValuesAreExactAndPercentilesUseNearestRank() {
    LatencyHistogram h = new LatencyHistogram();
    for (int v = 1; v <= 100; v++) h.record(v);
    assertEquals(50, h.percentile(50));
    assertEquals(99, h.percentile(99));
    assertEquals(100, h.percentile(100));
    assertEquals(1, h.percentile(0));
    assertEquals(1, h.percentile(1));
    assertEquals(2, h.percentile(1.5));
    assertEquals(50.5, h.mean(), 1e-9);
  }

  @Test
  void nearestRankOnFourValues() {
    LatencyHistogram h = new LatencyHistogram();
    for (long v : new long[] {40, 10, 30, 20}) h.record(v);
    assertEquals(10, h.percentile(25));
    assertEquals(20, h.percentile(26));
    assertEquals(20, h.percentile(50));
    assertEquals(30, h.percentile(75));
    assertEquals(40, h.percentile(99.9));
  }

  @Test
  void largeValuesAreWithinOnePercent() {
    LatencyHistogram h = new LatencyHistogram();
    for (long us = 1; us <= 10_000; us++) h.record(us * 1000);
    assertClose(5_000_000, h.percentile(50));
    assertClose(9_900_000, h.percentile(99));
    assertClose(9_990_000, h.percentile(99.9));
    assertEquals(1000, h.min());
    assertEquals(10_000_000, h.max());
  }

  @Test
  void percentilesMatchASortedArrayOnRandomData() {
    Random random = new Random(42);
    long[] values = new long[20_000];
    LatencyHistogram h = new LatencyHistogram();
    for (int i = 0; i < values.length; i++) {
      values[i] = (long) Math.exp(random.nextDouble() * 22);
      h.record(values[i]);
    }
    Arrays.sort(values);
    for (double q : new double[] {10, 50, 90, 99, 99.9}) {
      long exact = values[(int) Math.ceil(q / 100 * values.length) - 1];
      assertClose(exact, h.percentile(q));
    }
  }

  @Test
  void mergeEqualsRecordingEverything() {
    LatencyHistogram a = new LatencyHistogram();
    LatencyHistogram b = new LatencyHistogram();
    LatencyHistogram all = new LatencyHistogram();
    for (long v = 1; v < 3000; v++) {
      (v % 3 == 0 ? a : b).record(v * 997);
      all.record(v * 997);
    }
    a.merge(b);
    assertEquals(all.count(), a.count());
    assertEquals(all.min(), a.min());
    assertEquals(all.max(), a.max());
    assertEquals(all.mean(), a.mean(), 1e-6);
    for (double q : new double[] {1, 50, 99}) assertEquals(all.percentile(q), a.percentile(q));
  }

  @Test
  void negativeDurationsCountAsZero() {
    LatencyHistogram h = new LatencyHistogram();
    h.record(-5);
    assertEquals(0, h.max());
    assertEquals(1, h.count());
  }

  private static void assertClose(long expected, long actual) {
    double tolerance = Math.max(1, expected / 100.0);
    assertTrue(Math.abs(expected - actual) <= tolerance, "expected ~" + expected + " but was " + actual);
  }
}
