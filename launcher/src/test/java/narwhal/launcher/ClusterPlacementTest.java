package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Placement agrees across replicas (docs/operations.md#placement) on a real two-member cluster: a prefix one replica
 * placed is sent to the same producer by the other once it learns it from the prefix exchange (never when the other
 * has that engine at another url), and replicas place with the engine readings the cluster shares, made by whichever
 * replica took an engine's lock for the interval.
 */
@Timeout(120)
class ClusterPlacementTest {

  @Test
  void replicasChooseTheSameProducerForAPrefixAndShareTheEnginesReadings() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "P2:prefill", "D0:decode"), json -> json
        .put("placement", new JsonObject().put("metrics_interval_s", 0.2))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      List<NarwhalNode> replicas = List.of(h.addReplica(), h.addReplica());
      awaitReadings(h, replicas);
      for (int group = 0; group < 12; group++) {
        String affinity = "prefix:" + Integer.toHexString(("system prompt " + group).hashCode());
        NarwhalNode first = replicas.get(group % 2);
        NarwhalNode other = replicas.get(1 - group % 2);
        JsonObject placed = place(first, affinity);
        assertEquals("new_prefix", placed.getString("reason"), "a prefix seen for the first time goes to the least loaded producer, by rendezvous among equals");
        String home = placed.getString("iid");
        awaitKnown(h, other, group + 1);
        for (NarwhalNode node : List.of(other, first)) {
          JsonObject again = place(node, affinity);
          assertEquals(List.of(home, "prefix"), List.of(again.getString("iid"), again.getString("reason")),
              "group " + group + " goes to the producer that computed it, whichever replica places it: " + again.encode());
        }
      }

      Set<String> seenOnA = new HashSet<>();
      Set<String> seenOnB = new HashSet<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      Set<String> both = new HashSet<>();
      while (both.isEmpty() && System.nanoTime() < deadline) {
        seenOnA.addAll(readings(replicas.get(0)));
        seenOnB.addAll(readings(replicas.get(1)));
        both = new HashSet<>(seenOnA);
        both.retainAll(seenOnB);
        Thread.sleep(20);
      }
      assertTrue(!both.isEmpty(), "the replicas placed with the same readings (iid@read_at_ms/reader): A " + seenOnA + ", B " + seenOnB);
    }
  }

  @Test
  void aReplicaNeverLearnsAPrefixPlacedOnAnEngineItHasAtAnotherUrl() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "P2:prefill", "P9:prefill", "D0:decode"),
        json -> json
            .put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 0.2))
            .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      JsonObject fleet = h.fleetJson();
      io.vertx.core.json.JsonArray onA = new io.vertx.core.json.JsonArray();
      io.vertx.core.json.JsonArray onB = new io.vertx.core.json.JsonArray();
      for (Object o : fleet.getJsonArray("engines")) {
        JsonObject engine = (JsonObject) o;
        if ("P9".equals(engine.getString("iid"))) continue;
        onA.add(engine.copy());
        // B's fleet file was edited first: P0 moved to another host (the engine at P9's address)
        onB.add("P0".equals(engine.getString("iid")) ? engine.copy().put("url", h.engine("P9").url()) : engine.copy());
      }
      NarwhalNode a = start(h, fleet.copy().put("engines", onA));
      NarwhalNode b = start(h, fleet.copy().put("engines", onB));
      awaitReadings(h, List.of(a, b));
      String onOldP0 = "prefix:computed on the P0 replica A has";
      JsonObject placed = place(a, onOldP0, List.of("P1", "P2"));
      assertEquals("P0", placed.getString("iid"));
      assertEquals("P1", place(a, "prefix:marker", List.of("P0", "P2")).getString("iid"));
      // the marker was published with or after the placement on P0: once B knows it, it has seen both
      awaitKnown(h, b, 1);
      assertEquals(1, state(b).getJsonObject("placement").getInteger("prefixes_known"),
          "B learned the placement on P1 (the same url on both) and not the one on A's P0");
      JsonObject onBsP0 = place(b, onOldP0, List.of());
      assertEquals("new_prefix", onBsP0.getString("reason"), "B's P0 (another engine) holds none of the prefix's blocks: " + onBsP0.encode());
    }
  }

  @Test
  void aReplicaNeverTakesAReadingOfAnEngineItHasAtAnotherUrl() throws Exception {
    // B's fleet file has each engine at its partner's url (P0 and P1, D0 and D1 swapped): whatever the engines' owners,
    // every reading one replica takes is of another engine than the other lists under that iid (a reload applied on
    // one replica and not yet on the other, or fleet files that differ)
    Map<String, String> partner = Map.of("P0", "P1", "P1", "P0", "D0", "D1", "D1", "D0");
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 0.2).put("idle_metrics_interval_s", 0))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      JsonObject fleet = h.fleetJson();
      io.vertx.core.json.JsonArray onB = new io.vertx.core.json.JsonArray();
      for (Object o : fleet.getJsonArray("engines")) {
        JsonObject engine = (JsonObject) o;
        onB.add(engine.copy().put("url", h.engine(partner.get(engine.getString("iid"))).url()));
      }
      NarwhalNode a = start(h, fleet.copy());
      NarwhalNode b = start(h, fleet.copy().put("engines", onB));
      awaitReadings(h, List.of(a, b));
      long mark = System.currentTimeMillis();
      h.awaitTrue("five more intervals", 10_000, () -> Future.succeededFuture(System.currentTimeMillis() > mark + 1_000));
      for (NarwhalNode node : List.of(a, b)) {
        JsonObject state = state(node);
        String self = state.getJsonObject("placement").getString("reader");
        Set<String> held = readings(state);
        assertEquals(4, held.size(), "a reading of every engine: " + held);
        assertTrue(held.stream().allMatch(r -> r.endsWith("/" + self)), self + " holds only readings taken at the urls it "
            + "lists (fails: it took the other replica's readings of the engines at the swapped urls): " + held);
      }
    }
  }

  @Test
  void theLegsAReplicaSendsReachTheOthersBetweenTwoReadings() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json
        .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 30))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      h.awaitTrue("both replicas hold the same reading of P0", 90_000,
          () -> Future.all(stateOf(a), stateOf(b)).map(all -> {
            Set<String> onA = readings((JsonObject) all.resultAt(0));
            onA.retainAll(readings((JsonObject) all.resultAt(1)));
            return onA.stream().anyMatch(r -> r.startsWith("P0@"));
          }));
      for (int i = 0; i < 3; i++) hold(a, List.of("P1"));
      h.awaitTrue("B counts A's three legs on P0 long before the next reading (30 s)", 10_000,
          () -> stateOf(b).map(s -> sentSince(s, "P0") >= 3));
      assertEquals("P1", hold(b, List.of()).getString("iid"), "B places by load on the engine A did not just fill");
    }
  }

  private static int sentSince(JsonObject state, String iid) {
    for (Object o : state.getJsonArray("engines")) {
      JsonObject engine = (JsonObject) o;
      JsonObject load = engine.getJsonObject("load");
      if (iid.equals(engine.getString("iid")) && load != null) return load.getInteger("sent_since", 0);
    }
    return 0;
  }

  /** Reserves a prefill on {@code node} and keeps it: the reservation. */
  private static JsonObject hold(NarwhalNode node, List<String> exclude) {
    ReserveRequest request = new ReserveRequest("test-" + UUID.randomUUID(), Phase.PREFILL, exclude, null);
    DeliveryOptions local = new DeliveryOptions().setLocalOnly(true).setSendTimeout(2_000);
    return ClusterHarness.await(node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE, request.toJson(), local)
        .map(m -> m.body()));
  }

  private static NarwhalNode start(ClusterHarness h, JsonObject fleet) throws Exception {
    java.nio.file.Path journal = java.nio.file.Files.createTempFile("narwhal-cluster-journal", ".jsonl");
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(narwhal.common.config.NarwhalConfig.fromJson(
            fleet.put("journal", new JsonObject().put("path", journal.toString()))),
        NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV, java.util.function.UnaryOperator.identity()));
    h.replicas.add(node);
    return node;
  }

  private static void awaitReadings(ClusterHarness h, List<NarwhalNode> replicas) {
    h.awaitTrue("readings of every engine on every replica", 30_000,
        () -> ClusterHarness.all(replicas, n -> stateOf(n).map(s -> readings(s).size() >= 4)));
  }

  /** Waits until {@code node} knows a producer for {@code count} prefixes (it learns them from the other replica). */
  private static void awaitKnown(ClusterHarness h, NarwhalNode node, int count) {
    h.awaitTrue("the replica learned " + count + " prefixes", 30_000,
        () -> stateOf(node).map(s -> s.getJsonObject("placement").getInteger("prefixes_known") >= count));
  }

  private static Future<JsonObject> stateOf(NarwhalNode node) {
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(),
        new DeliveryOptions().setLocalOnly(true)).map(m -> m.body());
  }

  private static JsonObject state(NarwhalNode node) {
    return ClusterHarness.await(stateOf(node));
  }

  /** The readings a replica's placement holds now, as {@code iid@read_at_ms/reader}. */
  private static Set<String> readings(NarwhalNode node) {
    return readings(state(node));
  }

  private static Set<String> readings(JsonObject state) {
    Set<String> out = new HashSet<>();
    for (Object o : state.getJsonArray("engines")) {
      JsonObject load = ((JsonObject) o).getJsonObject("load");
      if (load != null && load.containsKey("running")) {
        out.add(((JsonObject) o).getString("iid") + "@" + load.getLong("read_at_ms") + "/" + load.getString("reader"));
      }
    }
    return out;
  }

  /** Reserves a prefill with {@code affinity} on {@code node} and releases it: the reservation (its {@code iid}, {@code reason}). */
  private static JsonObject place(NarwhalNode node, String affinity) {
    return place(node, affinity, List.of());
  }

  private static JsonObject place(NarwhalNode node, String affinity, List<String> exclude) {
    ReserveRequest request = new ReserveRequest("test-" + UUID.randomUUID(), Phase.PREFILL, exclude, null, affinity);
    DeliveryOptions local = new DeliveryOptions().setLocalOnly(true).setSendTimeout(2_000);
    JsonObject reply = ClusterHarness.await(node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE, request.toJson(), local)
        .map(m -> m.body()));
    node.vertx().eventBus().send(Addresses.PLACEMENT_RELEASE, new JsonObject().put("id", reply.getString("id")), local);
    return reply;
  }
}
