package narwhal.launcher;

import com.hazelcast.core.HazelcastInstance;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.SharedState;
import narwhal.common.config.ClusterConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cluster secret (docs/operations.md#threat-model): two real replicas share a secret; an intruder that joins
 * their Hazelcast cluster as a lite member (a Vert.x node with the cluster's name, without the secret) writes forged
 * engine states, a fleet hold and a load reading straight into the maps and publishes forged engine states, streaks,
 * on the bus: no engine changes state, every request is served, the replicas
 * write their own truth over the forged entry they hold a decision for, count what they refused, and report the
 * intruder (address, gauge, {@code /narwhal/state}) within 10 s.
 */
@Timeout(120)
class ClusterIntruderTest {
  private static final List<String> FLEET = List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode");

  @TempDir
  Path dir;

  private Path secret(String name, String text) throws Exception {
    return Files.writeString(dir.resolve(name), text);
  }

  private JsonObject withSecret(JsonObject fleet, Path secret) {
    fleet.getJsonObject("cluster").put("secret_file", secret.toString());
    return fleet.put("recovery", new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.1)
        .put("readmit_every", 100_000).put("liveness_every", 100_000));
  }

  private static String engineState(String iid, String state, long changedMs) {
    return new JsonObject().put("iid", iid).put("state", state).put("cause", "admin").put("changed_ms", changedMs)
        .put("origin", "breaker-forged").put("_by", "forged").put("_tag", "AAAA").encode();
  }

  private static double forged(NarwhalNode node, String where) {
    return node.registry().getMeters().stream().filter(m -> m.getId().getName().equals("narwhal.cluster.forged")
            && where.equals(m.getId().getTag("where")))
        .mapToDouble(m -> ((io.micrometer.core.instrument.Counter) m).count()).sum();
  }

  @Test
  void anIntruderWithoutTheSecretChangesNoEngineAndIsCounted() throws Exception {
    Path secret = secret("cluster.secret", "s3cr3t-".repeat(8));
    try (ClusterHarness h = ClusterHarness.start(FLEET, fleet -> withSecret(fleet, secret), (iid, o) -> { })) {
      List<NarwhalNode> replicas = List.of(h.addReplica(), h.addReplica());
      h.admin(replicas.get(0), "eject", new JsonObject().put("iid", "D0"));
      h.admin(replicas.get(0), "readmit", new JsonObject().put("iid", "D0"));
      h.awaitTrue("D0 serves again on every replica", 10_000,
          () -> ClusterHarness.all(replicas, node -> h.refuses(node, "D0", Phase.DECODE).map(r -> !r)));

      ClusterConfig cluster = h.config().cluster();
      HazelcastClusterManager manager = ClusterBootstrap.clusterManager(cluster, true);
      Vertx intruder = ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, cluster, manager, name -> null));
      try {
        HazelcastInstance hz = manager.getHazelcastInstance();
        long now = System.currentTimeMillis();
        var states = hz.<String, String>getMap(SharedState.ENGINE_STATE_MAP);
        states.put("D0", engineState("D0", "ejected", now + 1_000));
        states.put("P1", engineState("P1", "draining", now + 1_000));
        states.put(SharedState.FLEET_HOLD_KEY, new JsonObject().put("fleet_hold", true).put("changed_ms", now + 1_000)
            .put("origin", "breaker-forged").encode());
        intruder.eventBus().publish(Addresses.FLEET_CHANGED, new JsonObject(engineState("D1", "ejected", now + 2_000)));
        intruder.eventBus().publish(Addresses.STREAK_CHANGED, new JsonObject().put("origin", "breaker-forged").put("iid", "D1")
            .put("class", "connection").put("streak", 2));

        List<String> stolen = new java.util.concurrent.CopyOnWriteArrayList<>();
        ClusterHarness.await(intruder.eventBus().<JsonObject>consumer(Addresses.ADMIN, msg -> {
          stolen.add(String.valueOf(msg.headers().get("token")));
          msg.reply(new JsonObject().put("replica", "breaker-forged"));
        }).completion());
        String intruderAddress = hz.getCluster().getLocalMember().getAddress().getHost() + ":"
            + hz.getCluster().getLocalMember().getAddress().getPort();
        h.awaitTrue("every replica reports the intruder, and only it, as unverified", 10_000, () -> Future.succeededFuture(
            replicas.stream().allMatch(node -> {
              io.vertx.core.json.JsonArray listed = narwhal.common.bus.ClusterView.of(node.vertx()).toJson()
                  .getJsonArray("unverified_members", new io.vertx.core.json.JsonArray());
              return listed.size() == 1 && intruderAddress.equals(listed.getJsonObject(0).getString("address"))
                  && node.registry().get("narwhal.cluster.unverified.members").gauge().value() == 1;
            })));
        h.awaitTrue("the intruder's handler on narwhal.admin is gone from the subscriptions", 10_000, () -> Future.succeededFuture(
            hz.<String, Object>getMultiMap("__vertx.subs").get(Addresses.ADMIN).stream()
                .noneMatch(info -> info.toString().contains(manager.getNodeId()))));
        for (int i = 0; i < 6; i++) {
          JsonObject reply = h.admin(replicas.get(i % 2), "state", new JsonObject());
          assertTrue(!"breaker-forged".equals(reply.getString("replica")), "a replica answered: " + reply);
        }
        assertEquals(List.of(), stolen, "no admin token reached the intruder");
        h.awaitTrue("every replica refused the forged bus message and map entries", 10_000, () -> Future.succeededFuture(
            replicas.stream().allMatch(node -> forged(node, Addresses.FLEET_CHANGED) >= 1 && forged(node, SharedState.ENGINE_STATE_MAP) >= 1)));
        h.awaitTrue("the replicas wrote their own D0 over the forged one", 10_000, () -> Future.succeededFuture(
            "serving".equals(new JsonObject(states.get("D0")).getString("state"))));
        for (NarwhalNode node : replicas) {
          JsonObject breaker = ClusterHarness.await(h.breaker(node));
          for (String iid : List.of("P0", "P1", "D0", "D1")) {
            assertEquals("serving", ClusterHarness.engineIn(breaker, iid).getString("state"), iid + " on " + breaker.getString("replica"));
          }
          assertTrue(!breaker.getBoolean("fleet_hold"), "no forged fleet hold");
          assertEquals(0, ClusterHarness.engineIn(breaker, "D1").getJsonObject("streaks", new JsonObject()).getInteger("connection", 0),
              "no forged streak");
          for (int i = 0; i < 3; i++) assertEquals(200, h.complete(node));
        }
      } finally {
        intruder.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void replicasWithDifferentSecretsRefuseEachOthersWritesAndReportEachOther() throws Exception {
    Path first = secret("first.secret", "f".repeat(40));
    Path second = secret("second.secret", "s".repeat(40));
    try (ClusterHarness h = ClusterHarness.start(FLEET, fleet -> withSecret(fleet, first), (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      JsonObject secondFleet = h.fleetJson();
      secondFleet.getJsonObject("cluster").put("secret_file", second.toString());
      secondFleet.put("journal", new JsonObject().put("path", dir.resolve("journal-b.jsonl").toString()));
      NarwhalNode b = ClusterHarness.await(NarwhalNode.start(NarwhalConfig.fromJson(secondFleet), NarwhalNode.PreflightMode.STRICT,
          line -> { }, ClusterHarness.ENV));
      h.replicas.add(b);
      String decider = h.admin(a, "eject", new JsonObject().put("iid", "D0")).getString("replica");
      NarwhalNode other = decider.equals(ClusterHarness.await(h.breaker(a)).getString("replica")) ? b : a;
      h.awaitTrue("each replica reports the other as unverified, and the other refuses the ejection", 10_000, () -> Future.succeededFuture(
          List.of(a, b).stream().allMatch(node -> narwhal.common.bus.ClusterView.of(node.vertx()).toJson()
              .getJsonArray("unverified_members", new io.vertx.core.json.JsonArray()).size() == 1)
              && forged(other, SharedState.ENGINE_STATE_MAP) + forged(other, Addresses.FLEET_CHANGED) >= 1));
      assertEquals("serving", ClusterHarness.engineIn(ClusterHarness.await(h.breaker(other)), "D0").getString("state"),
          "a decision tagged with another secret is not taken");
    }
  }

  @Test
  void aMissingOrShortSecretStopsTheStartNamingTheKey() throws Exception {
    Path shortSecret = secret("short.secret", "too-short");
    try (ClusterHarness h = ClusterHarness.start(FLEET, fleet -> withSecret(fleet, shortSecret), (iid, o) -> { })) {
      NarwhalConfig config = h.config();
      Throwable refused = ClusterHarness.await(NarwhalNode.start(config, NarwhalNode.PreflightMode.SKIP, line -> { }, ClusterHarness.ENV)
          .map(node -> (Throwable) new AssertionError("started")).otherwise(err -> err));
      assertEquals("cluster.secret_file: the cluster secret in " + shortSecret + " is 9 bytes; expected at least 32 "
          + "(e.g. openssl rand -base64 48)", refused.getMessage());
      NarwhalConfig missing = NarwhalConfig.fromJson(h.fleetJson().put("cluster", h.fleetJson().getJsonObject("cluster")
          .put("secret_file", dir.resolve("absent").toString())));
      refused = ClusterHarness.await(NarwhalNode.start(missing, NarwhalNode.PreflightMode.SKIP, line -> { }, ClusterHarness.ENV)
          .map(node -> (Throwable) new AssertionError("started")).otherwise(err -> err));
      assertTrue(refused.getMessage().startsWith("cluster.secret_file: cannot read the cluster secret " + dir.resolve("absent")),
          refused.getMessage());
    }
  }
}
