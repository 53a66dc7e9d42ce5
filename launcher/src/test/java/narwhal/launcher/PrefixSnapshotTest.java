package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica that starts, or comes back on the cluster's view, takes a peer's prefix index (docs/operations.md#placement):
 * on a real Hazelcast cluster of router replicas with real simulated engines, a replica started after another placed
 * prefixes knows them before its first request and sends one to the producer that computed it, keeps the order of a
 * prefix's homes, learns no home it has at another url, and starts without a snapshot from a peer that never answers.
 */
@Timeout(180)
class PrefixSnapshotTest {
  /** More prefixes than one snapshot chunk holds (1,024). */
  private static final int BULK = 1_500;

  @Test
  void aReplicaStartedLaterKnowsThePrefixesBeforeItsFirstRequestAndSendsThemToTheirProducer() throws Exception {
    // with a cluster secret: the exchange and the snapshot are tagged and verified
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "P2:prefill", "D0:decode"), json -> ClusterHarness.withSecret(json)
        .put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 0.2)
            .put("prefix_block_chars", 16).put("prefix_blocks", 1))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      Path journalA = Files.createTempFile("narwhal-snapshot-a", ".jsonl");
      Path journalB = Files.createTempFile("narwhal-snapshot-b", ".jsonl");
      NarwhalNode a = start(h, h.fleetJson(), journalA);
      List<Future<JsonObject>> bulk = new ArrayList<>();
      for (int i = 0; i < BULK; i++) bulk.add(placeAsync(a, "prefix:bulk-" + i, List.of()));
      ClusterHarness.await(Future.all(bulk));
      // a prefix with two homes on A: P1 the newest, P0 the one before
      place(a, "prefix:two homes", List.of("P1", "P2"));
      place(a, "prefix:two homes", List.of("P0", "P2"));
      List<String> prompts = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        String prompt = "Prompt " + i + " shares a system prompt, then asks a question";
        prompts.add(prompt);
        assertEquals(200, complete(h, a, prompt));
      }
      h.awaitTrue("A's journal has its three requests", 10_000, () -> Future.succeededFuture(rows(journalA).size() == 3));
      int knownOnA = known(a);
      assertTrue(knownOnA >= BULK + 4, "A knows what it placed: " + knownOnA);

      NarwhalNode b = start(h, h.fleetJson(), journalB);
      assertTrue(known(b) >= BULK + 4, "before any request reached it, B knows A's prefixes: " + known(b));
      JsonObject snapshot = snapshotOf(b);
      assertEquals("learned", snapshot.getString("outcome"), "B took A's index while it started: " + snapshot);
      assertEquals(knownOnA, snapshot.getInteger("offered"), "in chunks, all of it: " + snapshot);
      JsonObject aSnapshot = snapshotOf(a);
      assertTrue("start".equals(aSnapshot.getString("on")) ? "no_peer".equals(aSnapshot.getString("outcome")) : "peer_joined".equals(aSnapshot.getString("on")),
          "the first replica had no one to ask at its start, and asks again once B joined: " + aSnapshot);
      h.awaitTrue("A took B's index when B joined", 10_000, () -> stateOf(a).map(s -> {
        JsonObject last = s.getJsonObject("placement").getJsonObject("prefix_snapshot");
        return "peer_joined".equals(last.getString("on")) && "learned".equals(last.getString("outcome"));
      }));

      JsonObject twoHomes = place(b, "prefix:two homes", List.of());
      assertEquals(List.of("P1", "prefix"), List.of(twoHomes.getString("iid"), twoHomes.getString("reason")),
          "the newest home first, as on A: " + twoHomes.encode());
      JsonObject older = place(b, "prefix:two homes", List.of("P1"));
      assertEquals(List.of("P0", "prefix"), List.of(older.getString("iid"), older.getString("reason")),
          "and the one before it second: " + older.encode());

      String prompt = prompts.get(1);
      JsonObject onA = rows(journalA).get(1);
      assertEquals("new_prefix", onA.getString("prefill_placement"), "a prompt seen for the first time: " + onA.encode());
      assertEquals(200, complete(h, b, prompt));
      h.awaitTrue("B's journal has the request", 10_000, () -> Future.succeededFuture(rows(journalB).size() == 1));
      JsonObject onB = rows(journalB).get(0);
      assertEquals(List.of(onA.getString("prefill_iid"), "prefix"), List.of(onB.getString("prefill_iid"), onB.getString("prefill_placement")),
          "B sends A's prefix to the producer that computed it: A " + onA.encode() + ", B " + onB.encode());
    }
  }

  @Test
  void aReplicaLearnsNoHomeItHasAtAnotherUrlFromTheSnapshot() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "P2:prefill", "P9:prefill", "D0:decode"),
        json -> json.put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 0.2))
            .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      JsonObject fleet = h.fleetJson();
      JsonArray onA = new JsonArray();
      JsonArray onB = new JsonArray();
      for (Object o : fleet.getJsonArray("engines")) {
        JsonObject engine = (JsonObject) o;
        if ("P9".equals(engine.getString("iid"))) continue;
        onA.add(engine.copy());
        // B's fleet file was edited first: P0 moved to another host (the engine at P9's address)
        onB.add("P0".equals(engine.getString("iid")) ? engine.copy().put("url", h.engine("P9").url()) : engine.copy());
      }
      NarwhalNode a = start(h, fleet.copy().put("engines", onA), Files.createTempFile("narwhal-snapshot-a", ".jsonl"));
      place(a, "prefix:on P0", List.of("P1", "P2"));
      place(a, "prefix:on P1", List.of("P0", "P2"));
      place(a, "prefix:P0 newest", List.of("P0", "P2"));
      place(a, "prefix:P0 newest", List.of("P1", "P2"));
      NarwhalNode b = start(h, fleet.copy().put("engines", onB), Files.createTempFile("narwhal-snapshot-b", ".jsonl"));
      assertEquals(2, known(b), "B took the prefixes with a home on P1, not the one on A's P0 alone");
      for (String affinity : List.of("prefix:on P1", "prefix:P0 newest")) {
        JsonObject placed = place(b, affinity, List.of());
        assertEquals(List.of("P1", "prefix"), List.of(placed.getString("iid"), placed.getString("reason")), affinity + ": " + placed.encode());
      }
      assertEquals("new_prefix", place(b, "prefix:on P0", List.of()).getString("reason"), "B's P0 is another engine, without the blocks");
      JsonObject snapshot = snapshotOf(b);
      assertEquals(List.of("learned", 3, 2), List.of(snapshot.getString("outcome"), snapshot.getInteger("offered"),
          snapshot.getInteger("learned")), "three offered, two learned: " + snapshot);
    }
  }

  @Test
  void aPeerThatNeverAnswersDoesNotHoldTheStartBeyondTheBound() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("placement", new JsonObject().put("policy", "cache_aware")), (iid, o) -> { })) {
      NarwhalConfig cfg = h.config();
      // a member that took the address and never replies, as a peer stuck in a pause does
      Vertx silent = ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, cfg.cluster(),
          ClusterBootstrap.clusterManager(cfg.cluster(), false), ClusterHarness.ENV));
      try {
        AtomicInteger asked = new AtomicInteger();
        ClusterHarness.await(silent.eventBus().consumer(Addresses.PLACEMENT_SNAPSHOT, msg -> asked.incrementAndGet()).completion());
        NarwhalNode b = h.addReplica();
        assertTrue(asked.get() >= 1, "B asked the silent peer");
        JsonObject snapshot = snapshotOf(b);
        assertEquals("timeout", snapshot.getString("outcome"), "B gave up on it at the bound and started: " + snapshot);
        assertEquals(200, h.complete(b), "and serves");
      } finally {
        ClusterHarness.await(silent.close());
      }
    }
  }

  @Test
  void aPeerSilentAtTheFirstAskIsAskedAgainWithinTheBound() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"),
        json -> json.put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 0.2))
            .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      NarwhalConfig cfg = h.config();
      // a peer in a pause when first asked, then back: it ignores its first request and answers the next with its index
      Vertx paused = ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, cfg.cluster(),
          ClusterBootstrap.clusterManager(cfg.cluster(), false), ClusterHarness.ENV));
      try {
        AtomicInteger asked = new AtomicInteger();
        JsonObject index = new narwhal.common.bus.PrefixSnapshot("placement-paused", List.of(List.of("prefix:known to the paused peer", "P1")),
            java.util.Map.of("P1", h.engine("P1").url()), false).toJson();
        ClusterHarness.await(paused.eventBus().<JsonObject>consumer(Addresses.PLACEMENT_SNAPSHOT, msg -> {
          if (asked.incrementAndGet() > 1) msg.reply(index);
        }).completion());
        NarwhalNode b = h.addReplica();
        JsonObject snapshot = snapshotOf(b);
        assertEquals("learned", snapshot.getString("outcome"), "B asked again after the silent ask and took the index: " + snapshot);
        assertEquals(List.of(1, 1), List.of(snapshot.getInteger("learned"), snapshot.getInteger("silent", 0)), snapshot.encode());
        assertEquals(2, asked.get(), "the paused peer was asked twice");
        JsonObject placed = place(b, "prefix:known to the paused peer", List.of());
        assertEquals(List.of("P1", "prefix"), List.of(placed.getString("iid"), placed.getString("reason")), placed.encode());
      } finally {
        ClusterHarness.await(paused.close());
      }
    }
  }

  @Test
  void aReplicaBackOnTheClusterViewTakesASnapshotAgain() throws Exception {
    JsonObject guard = new JsonObject().put("operation_timeout_s", 0.2).put("failure_threshold", 2).put("reset_timeout_s", 0.5);
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json
        .put("placement", new JsonObject().put("policy", "cache_aware").put("metrics_interval_s", 0.2))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000))
        .put("cluster", json.getJsonObject("cluster").put("shared_state", guard)), (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      StallingSharedData outage = new StallingSharedData();
      NarwhalNode b = h.addReplica(NarwhalNode.PreflightMode.STRICT, outage::wrap);
      assertEquals("start", snapshotOf(b).getString("on"));
      outage.stall();
      h.awaitTrue("B's placement view goes local", 20_000, () -> stateOf(b).map(s -> "local".equals(s.getJsonObject("placement").getString("view"))));
      for (int i = 0; i < 5; i++) place(a, "prefix:while B was cut off " + i, List.of());
      outage.resume();
      h.awaitTrue("B is back on the cluster's view and took A's index again", 20_000, () -> stateOf(b).map(s -> {
        JsonObject p = s.getJsonObject("placement");
        JsonObject snapshot = p.getJsonObject("prefix_snapshot");
        return "cluster".equals(p.getString("view")) && "rejoin".equals(snapshot.getString("on"))
            && "learned".equals(snapshot.getString("outcome")) && snapshot.getInteger("offered") >= 5;
      }));
    }
  }

  private static NarwhalNode start(ClusterHarness h, JsonObject fleet, Path journal) {
    NarwhalNode node = ClusterHarness.await(NarwhalNode.start(NarwhalConfig.fromJson(fleet.put("journal",
            new JsonObject().put("path", journal.toString()))), NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV,
        UnaryOperator.identity()));
    h.replicas.add(node);
    return node;
  }

  private static List<JsonObject> rows(Path journal) {
    try {
      return Files.readAllLines(journal).stream().filter(l -> !l.isBlank()).map(JsonObject::new).filter(r -> r.containsKey("rid")).toList();
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  private static int complete(ClusterHarness h, NarwhalNode node, String prompt) {
    JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", prompt).put("max_tokens", 2);
    HttpClientAgent http = h.engineVertx.createHttpClient();
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json");
    try {
      return ClusterHarness.await(http.request(options).compose(req -> req.send(body.toBuffer()))
          .compose(resp -> resp.body().map(b -> resp.statusCode())));
    } finally {
      http.close();
    }
  }

  private static Future<JsonObject> stateOf(NarwhalNode node) {
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_STATE, new JsonObject(),
        new DeliveryOptions().setLocalOnly(true)).map(m -> m.body());
  }

  private static JsonObject snapshotOf(NarwhalNode node) {
    JsonObject snapshot = ClusterHarness.await(stateOf(node)).getJsonObject("placement").getJsonObject("prefix_snapshot");
    assertTrue(snapshot != null, "placement.prefix_snapshot is shown");
    return snapshot;
  }

  private static int known(NarwhalNode node) {
    return ClusterHarness.await(stateOf(node)).getJsonObject("placement").getInteger("prefixes_known");
  }

  private static Future<JsonObject> placeAsync(NarwhalNode node, String affinity, List<String> exclude) {
    ReserveRequest request = new ReserveRequest("test-" + UUID.randomUUID(), Phase.PREFILL, exclude, null, affinity);
    DeliveryOptions local = new DeliveryOptions().setLocalOnly(true).setSendTimeout(5_000);
    return node.vertx().eventBus().<JsonObject>request(Addresses.PLACEMENT_RESERVE, request.toJson(), local).map(m -> {
      node.vertx().eventBus().send(Addresses.PLACEMENT_RELEASE, new JsonObject().put("id", m.body().getString("id")), local);
      return m.body();
    });
  }

  /** Reserves a prefill with {@code affinity} on {@code node} and releases it: the reservation (its {@code iid}, {@code reason}). */
  private static JsonObject place(NarwhalNode node, String affinity, List<String> exclude) {
    return ClusterHarness.await(placeAsync(node, affinity, exclude));
  }
}
