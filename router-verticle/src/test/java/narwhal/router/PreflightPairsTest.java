package narwhal.router;

import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which producer→consumer pairs preflight checks with a real handoff (docs/operations.md#processes): every pair up to
 * {@link Preflight#ALL_PAIRS_UP_TO}, beyond it a covering set in which each engine decodes once, every pair when asked,
 * none for a replica joining a cluster that judged the engines. Real simulated engines: 12 producers and 8 decode
 * engines, 96 pairs.
 */
@Timeout(120)
class PreflightPairsTest {
  private static List<String> fleet() {
    List<String> specs = new ArrayList<>();
    for (int i = 0; i < 12; i++) specs.add("P" + i + ":prefill");
    for (int i = 0; i < 8; i++) specs.add("D" + i + ":decode");
    return specs;
  }

  private static List<PreflightReport.Check> pairs(RouterHarness h, Preflight.Pairs which) {
    PreflightReport report = RouterHarness.await(new Preflight(h.vertx, h.config, new EngineFacts(), RouterHarness.ENV).pairs(which)
        .run(row -> { }));
    assertTrue(report.passed(), report.table());
    return report.checks().stream().filter(c -> c.check().equals("kv transfer")).toList();
  }

  @Test
  void beyondTheBoundACoveringSetChecksEveryEngineOnceAndAllOrNoneWhenAsked() throws Exception {
    try (RouterHarness h = RouterHarness.start(fleet())) {
      h.engines.values().forEach(e -> e.requests().clear());
      List<PreflightReport.Check> cover = pairs(h, Preflight.Pairs.AUTO);
      assertEquals(12, cover.size(), "max(P, D) handoffs, not P × D: " + cover);
      Set<String> checked = new HashSet<>();
      for (PreflightReport.Check c : cover) checked.addAll(List.of(c.target().split("→")));
      assertEquals(h.engines.keySet(), checked, "every producer and every consumer decodes once");
      assertEquals(96, pairs(h, Preflight.Pairs.ALL).size(), "narwhal preflight: every pair");
      assertEquals(0, pairs(h, Preflight.Pairs.NONE).size(), "a joining replica: no pair");
    }
  }

  @Test
  void aSmallFleetHasEveryPairChecked() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode", "B0:both"))) {
      List<String> targets = pairs(h, Preflight.Pairs.AUTO).stream().map(PreflightReport.Check::target).sorted().toList();
      assertEquals(List.of("B0→D0", "B0→D1", "P0→B0", "P0→D0", "P0→D1", "P1→B0", "P1→D0", "P1→D1"), targets,
          "every pair, a both engine not with itself");
    }
  }
}
