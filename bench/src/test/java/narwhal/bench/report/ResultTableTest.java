package narwhal.bench.report;

import narwhal.bench.load.LatencyHistogram;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ResultTableTest {

  @Test
  void alignsColumnsAndRightAlignsNumbers() {
    ResultTable t = new ResultTable("title", "path", "req/s").row("direct", "1200").row("router", "95.5");
    String[] lines = t.render().split("\n");
    assertEquals("title", lines[0]);
    assertEquals("path    req/s", lines[1]);
    assertEquals("------  -----", lines[2]);
    assertEquals("direct   1200", lines[3]);
    assertEquals("router   95.5", lines[4]);
  }

  @Test
  void markdownAndJsonKeepTheCells() {
    ResultTable t = new ResultTable("t", "a", "b").row(1, null);
    assertTrue(t.markdown().contains("| 1 | — |"));
    assertEquals("—", t.toJson().getJsonArray("rows").getJsonArray(0).getString(1));
  }

  @Test
  void refusesRowsOfTheWrongWidth() {
    assertThrows(IllegalArgumentException.class, () -> new ResultTable("t", "a", "b").row("only one"));
  }

  @Test
  void formatsRatesRatiosAndDeltas() {
    assertEquals("1.23", Fmt.ms(1_234_000));
    assertEquals("+0.41", Fmt.deltaMs(410_000));
    assertEquals("-2.00", Fmt.deltaMs(-2_000_000));
    assertEquals("0.75×", Fmt.ratio(0.75));
    assertEquals("1234", Fmt.rate(1234.4));
    assertEquals("12.5", Fmt.rate(12.49));
    assertEquals("—", Fmt.pct(new LatencyHistogram(), 50));
  }
}
