package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The legs-sent exchange between replicas (docs/operations.md#placement, {@code narwhal.placement.sent}) on a real
 * Hazelcast cluster of two router replicas and real simulated engines.
 */
@Timeout(120)
class LegsSentExchangeTest {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true).setSendTimeout(5_000);

  /**
   * Each replica takes the shared reading on its own round, a different phase of the interval on each: live, 3 demo
   * replicas held different readings of an engine in 165 of 240 samples (median gap 1000 ms, a whole interval), and a
   * count is only taken against the same reading, so most of the time a replica counted none of the others' legs.
   */
  @Test
  void aReplicaHoldingAnOlderReadingStillCountsTheLegsAnotherSentSinceTheNewerOne() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 60)),
        (iid, o) -> { })) {
      JsonObject fleetA = h.fleetJson().put("journal", new JsonObject().put("path",
          Files.createTempFile("narwhal-sent-a", ".jsonl").toString()));
      NarwhalNode a = ClusterHarness.await(NarwhalNode.start(NarwhalConfig.fromJson(fleetA), NarwhalNode.PreflightMode.STRICT,
          line -> { }, ClusterHarness.ENV, UnaryOperator.identity()));
      h.replicas.add(a);
      NarwhalNode b = h.addReplica();
      h.awaitTrue("both replicas hold a reading of D0", 20_000, () -> ClusterHarness.all(List.of(a, b),
          n -> d0(n).map(d0 -> d0.getValue("read_at_ms") != null)));
      long older = ClusterHarness.await(d0(b)).getLong("read_at_ms");

      // a newer reading of D0 in the shared map, taken by A on its round (a reload runs one) while B is between two
      long newer = Math.max(System.currentTimeMillis(), older + 1);
      JsonObject reading = new JsonObject().put("iid", "D0").put("read_at_ms", newer).put("reader", "test")
          .put("running", 0.0).put("waiting", 0.0).put("kv_usage", 0.0);
      ClusterHarness.await(a.vertx().sharedData().<String, String>getAsyncMap("narwhal.engine-load")
          .compose(m -> m.put("D0", reading.encode())));
      a.vertx().eventBus().publish(Addresses.CONFIG_CHANGED, NarwhalConfig.fromJson(fleetA).toJson(), LOCAL);
      h.awaitTrue("A takes the newer reading", 10_000, () -> d0(a).map(d0 -> d0.getLong("read_at_ms") == newer));
      assertEquals(older, ClusterHarness.await(d0(b)).getLong("read_at_ms"), "B still holds the older one");

      for (int i = 0; i < 4; i++) assertEquals("D0", hold(a, List.of("D1")));
      h.awaitTrue("B counts the 4 legs A sent to D0 since A's newer reading (fails: B holds the older reading until its "
          + "own round, and leaves out every count against another one; live, 3 demo replicas disagreed on an engine's "
          + "reading in 165 of 240 samples)", 10_000, () -> d0(b).map(d0 -> d0.getInteger("sent_since") == 4));
      List<String> onB = new ArrayList<>();
      for (int i = 0; i < 3; i++) onB.add(hold(b, List.of()));
      assertEquals(List.of("D1", "D1", "D1"), onB, "D0 runs A's 4 legs: B's next decodes go to D1");
    }
  }

  /**
   * Anything else published on the placement addresses is no message: live, 100 strings published on
   * {@code narwhal.placement.sent} wrote 2,800 log lines (an unhandled ClassCastException's stack trace each) on
   * every replica, and {@code narwhal.placement.prefixes} did the same.
   */
  @Test
  void aBodyThatIsNotJsonOnThePlacementAddressesIsIgnoredWithoutAnUnhandledException() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 60)),
        (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      h.awaitTrue("A holds a reading of D0", 20_000, () -> d0(a).map(d0 -> d0.getValue("read_at_ms") != null));
      List<Throwable> unhandled = new java.util.concurrent.CopyOnWriteArrayList<>();
      a.vertx().exceptionHandler(unhandled::add);
      b.vertx().eventBus().publish(Addresses.PLACEMENT_PREFIXES, "not json");
      b.vertx().eventBus().publish(Addresses.PLACEMENT_SENT, "not json");
      b.vertx().eventBus().publish(Addresses.PLACEMENT_SENT, io.vertx.core.buffer.Buffer.buffer("{}"));
      long readingMs = ClusterHarness.await(d0(a)).getLong("read_at_ms");
      b.vertx().eventBus().publish(Addresses.PLACEMENT_SENT, new JsonObject().put("origin", "probe").put("engines",
          new JsonObject().put("D0", new JsonObject().put("reading_ms", readingMs).put("sent", 3))));
      h.awaitTrue("A hears the well-formed count after the others", 10_000, () -> d0(a).map(d0 -> d0.getInteger("sent_since") == 3));
      assertEquals(List.of(), unhandled.stream().map(Throwable::toString).toList(),
          "a string or a buffer on the placement addresses is left out, not an unhandled exception logged with its stack "
              + "trace on every replica (fails: ClassCastException in the consumers' lambdas)");
    }
  }

  /** D0's {@code load} in the replica's placement state. */
  private static Future<JsonObject> d0(NarwhalNode node) {
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(), LOCAL)
        .map(m -> m.body().getJsonArray("engines").stream().map(JsonObject.class::cast)
            .filter(e -> "D0".equals(e.getString("iid"))).findFirst().orElseThrow())
        .map(e -> e.getJsonObject("load") == null ? new JsonObject() : e.getJsonObject("load"));
  }

  /** Reserves a decode on the replica and keeps it (a leg still running); the engine's iid. */
  private static String hold(NarwhalNode node, List<String> exclude) {
    ReserveRequest request = new ReserveRequest("test-" + UUID.randomUUID(), Phase.DECODE, exclude, null);
    return ClusterHarness.await(node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE, request.toJson(), LOCAL)
        .map(m -> m.body().getString("iid")));
  }
}
