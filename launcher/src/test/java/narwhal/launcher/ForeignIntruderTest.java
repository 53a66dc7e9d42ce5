package narwhal.launcher;

import com.hazelcast.core.HazelcastInstance;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.SharedState;
import narwhal.common.config.ClusterConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 39's attacks by a foreign JVM (this test's, on another loopback address, 127.0.0.2) that knows only the
 * cluster's name and members, against two real replica processes sharing a cluster secret: it writes every engine
 * ejected at version {@code Long.MAX_VALUE} and a fleet hold, publishes a forged ejection on the bus, writes a load
 * reading from the far future, registers its own {@code narwhal.admin} handler, and resets every failure streak
 * every 20 ms. Both replicas report it within 10 s; no engine changes state and no request fails because of it; an
 * engine that really dies is still ejected; an admin command goes through a replica and the token never reaches it.
 */
@Timeout(240)
class ForeignIntruderTest {
  private static final List<String> FLEET = List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode");

  @TempDir
  Path dir;

  private static String forgedState(String iid, String state, long changedMs) {
    return new JsonObject().put("iid", iid).put("state", state).put("cause", "admin").put("changed_ms", changedMs)
        .put("origin", "breaker-forged").encode();
  }

  private static JsonObject completion(int i) {
    return new JsonObject().put("model", ClusterHarness.MODEL).put("max_tokens", 2).put("prompt", "Request " + i + " past an intruder");
  }

  @Test
  void aForeignMemberWithoutTheSecretSteersNothingAndIsReported() throws Exception {
    Path secret = Files.writeString(dir.resolve("cluster.secret"), "f0reign-".repeat(6));
    ClusterHarness h = ClusterHarness.start(FLEET, json -> json
        .put("recovery", new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.2).put("readmit_every", 100_000)
            .put("liveness_every", 100_000))
        .put("serving", new JsonObject().put("drain_delay_s", 0)), (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    fleet.getJsonObject("cluster").put("secret_file", secret.toString()).put("members", new JsonArray()
        .add("127.0.0.1:" + h.basePort).add("127.0.0.1:" + (h.basePort + 1)));
    fleet.put("journal", new JsonObject().put("path", "-"));
    Path file = ReplicaProcess.writeFleet(fleet);
    Vertx intruder = null;
    try (ReplicaProcess a = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort);
         ReplicaProcess b = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + (h.basePort + 1))) {
      List<ReplicaProcess> replicas = List.of(a, b);
      JsonObject foreign = fleet.copy();
      foreign.getJsonObject("cluster").remove("secret_file");
      foreign.getJsonObject("cluster").put("host", "127.0.0.2").put("port", h.basePort + 7);
      ClusterConfig cluster = NarwhalConfig.fromJson(foreign).cluster();
      HazelcastClusterManager manager = ClusterBootstrap.clusterManager(cluster, true);
      intruder = ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, cluster, manager, name -> null));
      HazelcastInstance hz = manager.getHazelcastInstance();
      String address = hz.getCluster().getLocalMember().getAddress().getHost() + ":" + hz.getCluster().getLocalMember().getAddress().getPort();
      assertTrue(address.startsWith("127.0.0.2:"), address);

      var states = hz.<String, String>getMap(SharedState.ENGINE_STATE_MAP);
      for (String iid : List.of("P0", "P1", "D0", "D1")) states.put(iid, forgedState(iid, "ejected", Long.MAX_VALUE));
      states.put(SharedState.FLEET_HOLD_KEY, new JsonObject().put("fleet_hold", true).put("changed_ms", Long.MAX_VALUE)
          .put("origin", "breaker-forged").encode());
      hz.<String, String>getMap("narwhal.engine-load").put("D0", new JsonObject().put("iid", "D0").put("running", 0).put("waiting", 0)
          .put("read_at_ms", 4e18).encode());
      intruder.eventBus().publish(Addresses.FLEET_CHANGED, new JsonObject(forgedState("D1", "ejected", System.currentTimeMillis())));
      List<String> stolen = new CopyOnWriteArrayList<>();
      ClusterHarness.await(intruder.eventBus().<JsonObject>consumer(Addresses.ADMIN, msg -> {
        stolen.add(String.valueOf(msg.headers().get("token")));
        msg.reply(new JsonObject().put("replica", "breaker-forged"));
      }).completion());
      var counters = hz.<String, Long>getMap("__vertx.map.counter");
      intruder.setPeriodic(20, t -> counters.keySet().stream().filter(k -> k.startsWith("narwhal.streak."))
          .forEach(k -> counters.put(k, 0L)));

      for (ReplicaProcess replica : replicas) {
        replica.awaitState(s -> {
          JsonArray listed = s.getJsonObject("cluster", new JsonObject()).getJsonArray("unverified_members", new JsonArray());
          return listed.size() == 1 && address.equals(listed.getJsonObject(0).getString("address"));
        }, 10, () -> "the replica reports the foreign member " + address + " within 10 s: " + replica.state());
      }
      for (int i = 0; i < 20; i++) {
        assertEquals(200, replicas.get(i % 2).post("/v1/completions", completion(i)), "request " + i + " is served");
      }
      for (ReplicaProcess replica : replicas) {
        for (String iid : List.of("P0", "P1", "D0", "D1")) assertEquals("serving", replica.engineState(iid), iid + " on " + replica.state());
        String metrics = replica.get("/metrics").body();
        assertTrue(metrics.contains("narwhal_cluster_forged_total{where=\"" + SharedState.ENGINE_STATE_MAP + "\"}"), metrics);
      }

      ReplicaProcess.AdminRun drain = ReplicaProcess.adminOutput(file, "drain", "P1");
      assertEquals(0, drain.exit(), drain.text());
      for (ReplicaProcess replica : replicas) {
        replica.awaitState(s -> "draining".equals(engineIn(s, "P1")), 10, () -> "the drain reached " + replica.state());
      }
      assertEquals(List.of(), stolen, "the admin token never reached the foreign member");
      assertTrue(!drain.text().contains("breaker-forged"), drain.text());

      SimEngine dying = h.engine("D1");
      ClusterHarness.await(dying.stopListening());
      for (int i = 0; i < 40 && !"ejected".equals(a.engineState("D1")); i++) {
        assertEquals(200, a.post("/v1/completions", completion(100 + i)), "a request while D1 is down goes to D0");
      }
      assertEquals("ejected", a.engineState("D1"), "D1 is ejected though its streak is reset every 20 ms");
      b.awaitState(s -> "ejected".equals(engineIn(s, "D1")), 10, () -> "and the other replica takes it over: " + b.state());
    } finally {
      if (intruder != null) intruder.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      h.close();
    }
  }

  private static String engineIn(JsonObject state, String iid) {
    return state.getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid")))
        .findFirst().map(e -> e.getString("state")).orElse(null);
  }
}
