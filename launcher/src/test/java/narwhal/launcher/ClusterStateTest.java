package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.LegOutcome;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shared breaker state across router replicas (docs/architecture.md#what-lives-in-the-cluster, docs/operations.md#admin-commands) on a real three-member Hazelcast cluster:
 * a change made through one replica is followed by every replica's placement and breaker, a quarantine ends
 * everywhere at the instant it carries, losing a member loses no state, a member that joins later gets it,
 * and an engine is probed by one replica at a time.
 */
@Timeout(120)
class ClusterStateTest {
  private static final List<String> FLEET = List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode");

  private static UnaryOperator<JsonObject> recovery(JsonObject recovery) {
    return json -> json.put("recovery", recovery);
  }

  /** Quiet by default: long readmission and liveness intervals, so only what a test does moves engines. */
  private static JsonObject quiet() {
    return new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.1).put("readmit_every", 100_000)
        .put("liveness_every", 100_000);
  }

  @Test
  void anEngineEjectedThroughOneReplicaIsExcludedByEveryReplica() {
    try (ClusterHarness h = ClusterHarness.start(FLEET, recovery(quiet()), (iid, o) -> { })) {
      List<NarwhalNode> replicas = List.of(h.addReplica(), h.addReplica(), h.addReplica());
      assertEquals(3, replicas.get(0).clusterMembers().size());

      Object refused = h.admin(replicas.get(0), "eject", new JsonObject().put("iid", "D0"), "wrong-token");
      assertEquals(401, assertInstanceOf(ReplyException.class, refused).failureCode());

      JsonObject reply = h.admin(replicas.get(0), "eject", new JsonObject().put("iid", "D0"));
      assertEquals("ejected", ClusterHarness.engineIn(reply, "D0").getString("state"));
      long followedMs = h.awaitTrue("every replica's placement refuses D0", 10_000,
          () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D0", Phase.DECODE)));
      System.out.println("ClusterStateTest: ejection by " + reply.getString("replica") + " followed by all placements in "
          + followedMs + " ms");
      h.awaitTrue("every replica's breaker holds D0 ejected by admin", 5_000, () -> ClusterHarness.all(replicas,
          node -> h.breaker(node).map(s -> "ejected".equals(ClusterHarness.engineIn(s, "D0").getString("state"))
              && "admin".equals(ClusterHarness.engineIn(s, "D0").getString("cause")))));

      h.engine("D0").clearRequests();
      for (NarwhalNode node : replicas) {
        for (int i = 0; i < 2; i++) assertEquals(200, h.complete(node), "D1 serves while D0 is out");
      }
      assertTrue(h.engine("D0").requests().isEmpty(), "no replica placed a request on the ejected engine");

      h.admin(replicas.get(2), "readmit", new JsonObject().put("iid", "D0"));
      h.awaitTrue("every replica places on D0 again", 10_000,
          () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D0", Phase.DECODE).map(r -> !r)));
    }
  }

  @Test
  void aQuarantineEndsOnEveryMemberAtTheInstantItCarries() {
    try (ClusterHarness h = ClusterHarness.start(FLEET, recovery(quiet()), (iid, o) -> { })) {
      List<NarwhalNode> replicas = List.of(h.addReplica(), h.addReplica(), h.addReplica());
      JsonObject reply = h.admin(replicas.get(1), "quarantine", new JsonObject().put("iid", "D1").put("seconds", 2));
      long until = ClusterHarness.engineIn(reply, "D1").getLong("quarantine_until_ms");

      h.awaitTrue("every breaker holds D1 quarantined until the same instant", 5_000, () -> ClusterHarness.all(replicas,
          node -> h.breaker(node).map(s -> Long.valueOf(until).equals(ClusterHarness.engineIn(s, "D1").getLong("quarantine_until_ms")))));
      h.awaitTrue("every placement refuses D1", 5_000,
          () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D1", Phase.DECODE)));

      h.awaitTrue("every placement takes D1 again once the quarantine ends", 10_000,
          () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D1", Phase.DECODE).map(r -> !r)));
      long endedAt = System.currentTimeMillis();
      assertTrue(endedAt >= until, "not before the end it carries");
      assertTrue(endedAt - until < 1_500, "every member ended it promptly: " + (endedAt - until) + " ms after");
      for (NarwhalNode node : replicas) {
        assertEquals("serving", ClusterHarness.engineIn(ClusterHarness.await(h.breaker(node)), "D1").getString("state"));
      }
    }
  }

  @Test
  void losingAMemberKeepsTheStateAndAMemberJoiningLaterGetsIt() {
    try (ClusterHarness h = ClusterHarness.start(FLEET, recovery(quiet()), (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      NarwhalNode c = h.addReplica();
      h.admin(a, "eject", new JsonObject().put("iid", "P1"));
      JsonObject quarantined = h.admin(a, "quarantine", new JsonObject().put("iid", "D0").put("seconds", 600));
      long until = ClusterHarness.engineIn(quarantined, "D0").getLong("quarantine_until_ms");
      a.vertx().eventBus().send(Addresses.BREAKER_OUTCOME,
          new LegOutcome("D1", Phase.DECODE, false, FailureClass.TIMEOUT, "decode_timeout", null, false).toJson(),
          new DeliveryOptions().setLocalOnly(true));
      h.awaitTrue("the state reached every member", 5_000, () -> ClusterHarness.all(List.of(a, b, c), node -> stateKept(h, node, until)));

      ClusterHarness.await(a.close());
      h.replicas.remove(a);
      h.awaitTrue("the two members left see each other only", 20_000,
          () -> Future.succeededFuture(b.clusterMembers().size() == 2 && c.clusterMembers().size() == 2));
      h.awaitTrue("the state outlived the member that wrote it", 5_000,
          () -> ClusterHarness.all(List.of(b, c), node -> stateKept(h, node, until)));

      NarwhalNode late = h.addReplica();
      assertEquals(3, late.clusterMembers().size());
      assertTrue(ClusterHarness.await(stateKept(h, late, until)), "a member joining later got the state at start");
    }
  }

  /** P1 ejected, D0 quarantined until {@code until}, a timeout streak of 1 on D1: in the breaker and in placement. */
  private static Future<Boolean> stateKept(ClusterHarness h, NarwhalNode node, long until) {
    Future<JsonObject> breaker = h.breaker(node);
    Future<Boolean> p1 = h.refuses(node, "P1", Phase.PREFILL);
    Future<Boolean> d0 = h.refuses(node, "D0", Phase.DECODE);
    return Future.all(breaker, p1, d0).map(v -> {
      JsonObject s = breaker.result();
      return p1.result() && d0.result()
          && "ejected".equals(ClusterHarness.engineIn(s, "P1").getString("state"))
          && "quarantined".equals(ClusterHarness.engineIn(s, "D0").getString("state"))
          && Long.valueOf(until).equals(ClusterHarness.engineIn(s, "D0").getLong("quarantine_until_ms"))
          && ClusterHarness.engineIn(s, "D1").getJsonObject("streaks").getInteger("timeout") == 1;
    });
  }

  @Test
  void anEngineIsProbedByOneReplicaAtATimeClusterWide() {
    JsonObject fast = new JsonObject().put("eject_after", 1).put("monitor_interval_s", 0.05).put("readmit_every", 2)
        .put("liveness_every", 100_000);
    try (ClusterHarness h = ClusterHarness.start(FLEET, recovery(fast),
        (iid, o) -> o.setTtftBaseMs("D0".equals(iid) ? 1_500 : 0))) {
      NarwhalNode.PreflightMode skip = NarwhalNode.PreflightMode.SKIP;
      List<NarwhalNode> replicas = List.of(h.addReplica(skip), h.addReplica(skip), h.addReplica(skip));
      h.engines.values().forEach(narwhal.sim.SimEngine::clearRequests);
      replicas.get(0).vertx().eventBus().send(Addresses.BREAKER_OUTCOME,
          new LegOutcome("D0", Phase.DECODE, false, FailureClass.STREAM, "first_token_timeout", "P0", true).toJson(),
          new DeliveryOptions().setLocalOnly(true));
      h.awaitTrue("every replica holds D0", 5_000, () -> ClusterHarness.all(replicas,
          node -> h.breaker(node).map(s -> "held".equals(ClusterHarness.engineIn(s, "D0").getString("state")))));
      h.awaitTrue("the probe readmitted D0 everywhere", 20_000,
          () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D0", Phase.DECODE).map(r -> !r)));

      long probes = h.engine("D0").requests().stream().filter(r -> r.getString("request_id", "").startsWith("probe-")).count();
      double counted = replicas.stream().mapToDouble(node -> node.registry().find("narwhal.engine.probes").tag("iid", "D0")
          .counters().stream().mapToDouble(io.micrometer.core.instrument.Counter::count).sum()).sum();
      assertEquals(1, probes, "one probe reached D0 though three replicas' readmission rounds (every 100 ms) wanted one "
          + "while it ran (1.5 s)");
      assertEquals(1.0, counted, "one probe counted across the replicas");
    }
  }

  @Test
  void anEngineAddedToOneMoreReplicasFleetFileKeepsTheDrainTheClusterHolds() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode", "D2:decode"), recovery(quiet()
        .put("readmit_every", 2)), (iid, o) -> { })) {
      NarwhalNode full = h.addReplica();
      io.vertx.core.json.JsonObject without = h.config().toJson();
      io.vertx.core.json.JsonArray engines = new io.vertx.core.json.JsonArray();
      without.getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> !"D2".equals(e.getString("iid"))).forEach(engines::add);
      without.put("engines", engines);
      java.nio.file.Path file = java.nio.file.Files.createTempFile("narwhal-replica-fleet", ".json");
      java.nio.file.Files.writeString(file, without.encodePrettily());
      NarwhalNode partial = ClusterHarness.await(NarwhalNode.start(narwhal.common.config.NarwhalConfig.fromJson(without),
          NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV, UnaryOperator.identity()));
      h.replicas.add(partial);
      ClusterHarness.await(partial.watch(file));

      // Sent to the replica that lists D2: an admin message may reach any replica, and one that does not list an
      // engine refuses commands about it (issue 29 item 6).
      ClusterHarness.await(full.vertx().eventBus().request(Addresses.ADMIN, new JsonObject().put("command", "drain")
          .put("args", new JsonObject().put("iid", "D2")), new DeliveryOptions().setLocalOnly(true).addHeader("token", ClusterHarness.TOKEN)));
      java.nio.file.Files.writeString(file, h.config().toJson().encodePrettily());
      h.awaitTrue("the reloaded replica knows D2", 10_000,
          () -> h.breaker(partial).map(s -> s.getJsonArray("engines").stream().map(JsonObject.class::cast)
              .anyMatch(e -> "D2".equals(e.getString("iid")))));
      h.awaitTrue("it adopted the cluster's drain", 10_000,
          () -> h.breaker(partial).map(s -> "draining".equals(ClusterHarness.engineIn(s, "D2").getString("state"))));
      for (int round = 0; round < 10; round++) {
        for (NarwhalNode node : List.of(full, partial)) {
          assertEquals("draining", ClusterHarness.engineIn(ClusterHarness.await(h.breaker(node)), "D2").getString("state"),
              "the reload never undid the drain");
          assertTrue(ClusterHarness.await(h.refuses(node, "D2", Phase.DECODE)), "no replica places on the drained engine");
        }
        ClusterHarness.await(Future.<Void>future(p -> full.vertx().setTimer(300, t -> p.complete())));
      }
    }
  }
}
