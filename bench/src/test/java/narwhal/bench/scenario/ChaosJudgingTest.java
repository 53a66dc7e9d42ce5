package narwhal.bench.scenario;

import narwhal.bench.load.Exchange;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How the chaos benchmark judges requests against a kill, and which of its phases a run selects. */
class ChaosJudgingTest {
  private static Exchange ok(long start, long end) {
    return new Exchange(start, end, Exchange.Outcome.OK, 200, null, -1, 1, new long[0], null);
  }

  private static Exchange failed(long start, long end) {
    return new Exchange(start, end, Exchange.Outcome.TRANSPORT_ERROR, 0, null, -1, 0, new long[0], "closed");
  }

  @Test
  void aRequestIsJudgedByWhenItStartedAgainstTheKill() {
    long kill = 100;
    ChaosKillPhase.Judged j = ChaosKillPhase.Judged.of(List.of(
        ok(10, 50), failed(20, 60),            // over before the kill: neither running nor after
        ok(90, 150), failed(95, 101),          // running at the kill
        ok(101, 130), failed(120, 140),        // started after the kill
        failed(210, 220)), kill, 200);         // after the next kill: judged by that one
    assertEquals(2, j.inFlight());
    assertEquals(1, j.inFlightFailed());
    assertEquals(2, j.after());
    assertEquals(1, j.afterFailed());
    assertEquals(1, j.afterKinds().get("transport error"));
  }

  @Test
  void phasesAreSelectedByNameInTheirOwnOrder() {
    assertEquals(ChaosScenario.PHASES, ChaosScenario.selected(null));
    assertEquals(List.of("kill", "partition", "full-disk", "readiness"),
        ChaosScenario.selected(" readiness,kill,full-disk,partition ").stream().map(ChaosScenario.Phase::name).toList());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ChaosScenario.selected("kill,split"));
    assertTrue(e.getMessage().contains("[split]"), e.getMessage());
  }
}
