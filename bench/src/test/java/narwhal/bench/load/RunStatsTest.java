package narwhal.bench.load;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RunStatsTest {
  static Exchange ok(long start, long end, long firstToken, long... gaps) {
    return new Exchange(start, end, Exchange.Outcome.OK, 200, "r", firstToken, gaps.length + 1, gaps, null);
  }

  @Test
  void countsOnlyExchangesEndingInsideTheWindow() {
    long s = 1_000_000_000L;
    RunStats stats = new RunStats("t").window(s, 3 * s);
    stats.add(ok(0, s - 1, 5));
    stats.add(ok(s - 10, s + 10, 7, 3, 4));
    stats.add(ok(2 * s, 3 * s, 9));
    stats.add(ok(2 * s, 3 * s + 1, 9));
    assertEquals(2, stats.completed());
    assertEquals(2, stats.ok());
    assertEquals(1.0, stats.rps(), 1e-9);
    assertEquals(4, stats.tokens());
    assertEquals(2.0, stats.tokensPerSecond(), 1e-9);
    assertEquals(2, stats.itl().count());
    assertEquals(7, stats.firstToken().min());
  }

  @Test
  void clientCancellationsAreNotErrors() {
    RunStats stats = new RunStats("t");
    stats.add(new Exchange(0, 5, Exchange.Outcome.CANCELLED, 200, "a", 1, 1, new long[0], null));
    stats.add(new Exchange(0, 5, Exchange.Outcome.HTTP_ERROR, 502, "b", -1, 0, new long[0], "bad gateway"));
    stats.add(ok(0, 5, 1));
    assertEquals(3, stats.completed());
    assertEquals(1, stats.errors());
    assertEquals(1, stats.count(Exchange.Outcome.CANCELLED));
    assertEquals(1L, stats.statuses().get(502));
    assertEquals(1, stats.errorSamples().size());
  }

  @Test
  void absorbingAddsWindowsAndCounts() {
    long s = 1_000_000_000L;
    RunStats a = new RunStats("a").window(0, 2 * s);
    a.add(ok(0, s, 1));
    RunStats b = new RunStats("b").window(0, 2 * s);
    b.add(ok(0, s, 1));
    b.add(ok(0, s, 1));
    RunStats total = new RunStats("total");
    total.absorb(a);
    total.absorb(b);
    assertEquals(3, total.ok());
    assertEquals(4.0, total.seconds(), 1e-9);
    assertEquals(0.75, total.rps(), 1e-9);
  }
}
