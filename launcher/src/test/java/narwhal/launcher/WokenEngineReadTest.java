package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An idle engine read on its slowed cadence (docs/operations.md#placement) that gets a leg is read again by its owner
 * alone, on a real Hazelcast cluster of two router replicas and real simulated engines: every replica that knows of
 * the leg finds the reading far past the interval at once, and each read it in the owner's round (the busy phase of
 * {@code bench fleet-scale}: a producer's readings split between its owner and both backups).
 */
@Timeout(120)
class WokenEngineReadTest {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true).setSendTimeout(5_000);

  @Test
  void aLegOnAnIdleEngineIsReadByItsOwnerNotBesideIt() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 1).put("idle_metrics_interval_s", 8)),
        (iid, o) -> { })) {
      NarwhalNode first = h.addReplica();
      NarwhalNode second = h.addReplica();
      List<NarwhalNode> both = List.of(first, second);
      // D0 idles: its readings slow to 2, 4, 8 s; wait for one whose next read is seconds away and already 1.3 s old
      // (past the interval and a backup's half interval more: the old code's backup read it in the round it saw the leg)
      h.awaitTrue("both replicas hold an idle reading of D0 on a slowed cadence, 1.3 s old", 60_000,
          () -> ClusterHarness.all(both, n -> d0(n).map(d0 -> d0.getInteger("idle_readings", 0) >= 2
              && d0.getLong("read_at_ms", Long.MAX_VALUE) + 1_300 < System.currentTimeMillis())));
      String reader = ClusterHarness.await(d0(first)).getString("reader");
      NarwhalNode owner = ClusterHarness.await(name(first)).equals(reader) ? first : second;
      NarwhalNode backup = owner == first ? second : first;
      assertEquals(reader, ClusterHarness.await(name(owner)), "D0's reading is one of the two replicas'");
      double ownerBefore = reads(owner);
      double backupBefore = reads(backup);

      long placed = System.currentTimeMillis();
      assertEquals("D0", ClusterHarness.await(h.place(backup, Phase.DECODE, List.of("D1"))), "the backup places a leg on D0");
      h.awaitTrue("both replicas hold a reading of D0 taken after the leg", 10_000,
          () -> ClusterHarness.all(both, n -> d0(n).map(d0 -> d0.getLong("read_at_ms", 0L) > placed)));
      long seen = System.currentTimeMillis();
      // the backup's round after the owner's: what the old code read beside the owner would be counted by now
      h.awaitTrue("a round more", 5_000, () -> Future.succeededFuture(System.currentTimeMillis() > seen + 1_100));
      assertTrue(reads(owner) > ownerBefore, "the owner read D0 after the leg");
      assertEquals(backupBefore, reads(backup), "the backup left D0 to its owner (fails: it read D0 in the same round, "
          + "the reading far past the interval once the leg was known)");
    }
  }

  private static Future<JsonObject> d0(NarwhalNode node) {
    return state(node).map(s -> s.getJsonArray("engines").stream().map(JsonObject.class::cast)
            .filter(e -> "D0".equals(e.getString("iid"))).findFirst().orElseThrow())
        .map(e -> e.getJsonObject("load") == null ? new JsonObject() : e.getJsonObject("load"));
  }

  private static Future<String> name(NarwhalNode node) {
    return state(node).map(s -> s.getJsonObject("placement").getString("reader"));
  }

  private static Future<JsonObject> state(NarwhalNode node) {
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL).map(m -> m.body());
  }

  /** The replica's own readings of D0's {@code /metrics}, both outcomes. */
  private static double reads(NarwhalNode node) {
    return node.registry().find("narwhal.engine.load.reads").tag("iid", "D0").counters().stream()
        .mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
  }
}
