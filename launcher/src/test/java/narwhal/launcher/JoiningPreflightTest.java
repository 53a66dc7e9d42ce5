package narwhal.launcher;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica joining a cluster other replicas already run checks each engine (it learns their facts) but no handoff
 * pairs: the cluster's engine states, which its breaker adopts, already judge them (docs/operations.md#processes).
 */
@Timeout(120)
class JoiningPreflightTest {
  @Test
  void theFirstReplicaChecksThePairsAJoiningOneOnlyTheEngines() throws Exception {
    try (ClusterHarness cluster = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), UnaryOperator.identity(), (iid, o) -> { })) {
      List<String> first = new CopyOnWriteArrayList<>();
      cluster.replicas.add(ClusterHarness.await(NarwhalNode.start(cluster.config(), NarwhalNode.PreflightMode.STRICT, first::add,
          ClusterHarness.ENV)));
      List<String> joining = new CopyOnWriteArrayList<>();
      cluster.replicas.add(ClusterHarness.await(NarwhalNode.start(cluster.config(), NarwhalNode.PreflightMode.STRICT, joining::add,
          ClusterHarness.ENV)));
      assertTrue(first.stream().anyMatch(l -> l.startsWith("P0→D0")), "the first replica decodes a handoff: " + first);
      assertTrue(joining.stream().anyMatch(l -> l.startsWith("D0") && l.contains("health")), "the joining one checks D0: " + joining);
      assertTrue(joining.stream().noneMatch(l -> l.contains("→")), "and no pair: " + joining);
    }
  }
}
