package narwhal.bench.scenario;

import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.PhasedLoad;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The rolling-restart (R4) and propagation (P5) tables print p50 and p99 as percentiles 50 and 99 of 0–100, the scale
 * {@link LatencyHistogram#percentile} takes (they once passed 0.5 and 0.99, which read the fastest requests).
 */
class PercentileCellsTest {
  /** 1 ms, 2 ms, …, 100 ms. */
  private static LatencyHistogram oneToHundredMs(long offsetMs) {
    LatencyHistogram h = new LatencyHistogram();
    for (long ms = 1; ms <= 100; ms++) h.record((ms + offsetMs) * 1_000_000);
    return h;
  }

  private static double cellMs(String cell) {
    return Double.parseDouble(cell);
  }

  @Test
  void rollingRestartLatencyCellsArePercentilesFiftyAndNinetyNine() {
    List<String> cells = RollingRestartScenario.latencyCells(oneToHundredMs(10), oneToHundredMs(0), oneToHundredMs(0));
    assertEquals(60.0, cellMs(cells.get(0)), 1.0, "p50: " + cells);
    assertEquals(109.0, cellMs(cells.get(1)), 1.5, "p99: " + cells);
    assertEquals(10.0, cellMs(cells.get(2)), 1.0, "added p50: " + cells);
    assertEquals(10.0, cellMs(cells.get(3)), 1.5, "added p99: " + cells);
    assertEquals(99.0, cellMs(cells.get(4)), 1.0, "first token p99: " + cells);
  }

  @Test
  void theAddedLatencyVerdictIsTheDifferenceOfTheNinetyNinthPercentiles() {
    PhasedLoad.Tally restart = new PhasedLoad.Tally("SIGTERM A json");
    PhasedLoad.Tally settled = new PhasedLoad.Tally("after SIGTERM A json");
    for (long ms = 1; ms <= 100; ms++) restart.stats.latency().record(2 * ms * 1_000_000);
    settled.stats.latency().merge(oneToHundredMs(0));
    String added = RollingRestartScenario.added(Map.of("json", restart), Map.of("json", settled), "json");
    assertEquals(198.0 - 99.0, Double.parseDouble(added), 2.0, "added p99: " + added);
  }

  @Test
  void propagationRoundTripCellsArePercentilesFiftyAndNinetyNine() {
    List<String> cells = PropagationScenario.roundTripCells(oneToHundredMs(0));
    assertEquals(50.0, cellMs(cells.get(0)), 1.0, "p50: " + cells);
    assertEquals(99.0, cellMs(cells.get(1)), 1.0, "p99: " + cells);
  }
}
