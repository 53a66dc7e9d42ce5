package narwhal.bench.scenario;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PeakOverlapTest {
  @Test
  void countsTheMostIntervalsOpenAtOnce() {
    List<long[]> intervals = new ArrayList<>(List.of(new long[] {0, 10}, new long[] {5, 15}, new long[] {9, 12}, new long[] {12, 20},
        new long[] {30, 40}));
    assertEquals(3, ConcurrencyScenario.peakOverlap(intervals));
  }

  @Test
  void anIntervalEndingWhenAnotherStartsDoesNotOverlapIt() {
    assertEquals(1, ConcurrencyScenario.peakOverlap(new ArrayList<>(List.of(new long[] {0, 10}, new long[] {10, 20}))));
    assertEquals(0, ConcurrencyScenario.peakOverlap(new ArrayList<>()));
  }
}
