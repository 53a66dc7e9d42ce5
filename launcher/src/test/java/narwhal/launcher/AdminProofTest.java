package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.AdminProof;
import narwhal.common.bus.Addresses;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal admin} over the bus never sends the admin token (issue 39 item 4): it sends an {@link AdminProof},
 * which real replicas with a cluster secret take once, while fresh, whichever replica it reaches; a replayed or stale proof and a token sent in the
 * clear are refused with 401. A foreign handler on {@code narwhal.admin} (a Hazelcast member without the secret,
 * alone in the cluster so that it is the one the command reaches) receives no token, and its reply, claiming done, is
 * not believed: without the cluster secret's seal, nor the token's mac, the command exits 2 and prints no {@code done}.
 */
@Timeout(180)
class AdminProofTest {
  private static final List<String> FLEET = List.of("P0:prefill", "D0:decode", "D1:decode");
  private static final JsonObject RECOVERY = new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000)
      .put("liveness_every", 100_000);

  private static AdminCliRun admin(Path fleet, String... args) {
    return AdminCliRun.of(fleet, ClusterHarness.ENV, args);
  }

  private static Path fleetFile(JsonObject fleet) throws Exception {
    Path file = Files.createTempFile("narwhal-admin-proof", ".json");
    Files.writeString(file, fleet.encodePrettily());
    return file;
  }

  private static Object request(NarwhalNode via, JsonObject body, DeliveryOptions options) {
    try {
      return via.vertx().eventBus().<JsonObject>request(Addresses.ADMIN, body, options.setSendTimeout(10_000))
          .toCompletionStage().toCompletableFuture().get(15, TimeUnit.SECONDS).body();
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void replicasWithASecretTakeAProofOnceAndRefuseReplaysStaleProofsAndTheTokenInTheClear() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(FLEET, fleet -> ClusterHarness.withSecret(fleet.put("recovery", RECOVERY)), (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      Path fleet = fleetFile(h.fleetJson());

      AdminCliRun eject = admin(fleet, "eject", "D0");
      assertEquals(0, eject.exit(), eject.out() + eject.err());
      assertTrue(eject.out().startsWith("eject D0: done"), eject.out());
      h.awaitTrue("both replicas refuse D0", 10_000, () -> ClusterHarness.all(List.of(a, b), node -> h.refuses(node, "D0", Phase.DECODE)));

      AdminCliRun quarantine = admin(fleet, "quarantine", "D1", "--seconds", "0.75e3", "--force");
      assertEquals(0, quarantine.exit(), "a fractional argument's proof survives the bus's JSON: " + quarantine.out() + quarantine.err());
      assertTrue(quarantine.out().startsWith("quarantine D1: done"), quarantine.out());
      AdminCliRun readmitD1 = admin(fleet, "readmit", "D1");
      assertEquals(0, readmitD1.exit(), readmitD1.out() + readmitD1.err());

      JsonObject readmit = AdminProof.body(ClusterHarness.TOKEN, "readmit", new JsonObject().put("iid", "D0"), System.currentTimeMillis());
      JsonObject first = assertInstanceOf(JsonObject.class, request(a, readmit, new DeliveryOptions()));
      assertEquals("serving", first.getJsonObject("effect").getString("seen"));
      for (int i = 0; i < 4; i++) {
        // narwhal.admin's handlers take turns: the replays reach both replicas, each refuses (the nonces are shared)
        ReplyException replayed = assertInstanceOf(ReplyException.class, request(i % 2 == 0 ? a : b, readmit, new DeliveryOptions()));
        assertEquals(401, replayed.failureCode());
        assertEquals("admin proof already used (a replayed command)", replayed.getMessage());
      }

      JsonObject stale = AdminProof.body(ClusterHarness.TOKEN, "eject", new JsonObject().put("iid", "D1"),
          System.currentTimeMillis() - AdminProof.FRESH_MS - 5_000);
      ReplyException refusedStale = assertInstanceOf(ReplyException.class, request(a, stale, new DeliveryOptions()));
      assertEquals(401, refusedStale.failureCode());
      assertTrue(refusedStale.getMessage().startsWith("admin proof is stale"), refusedStale.getMessage());

      JsonObject clear = new JsonObject().put("command", "eject").put("args", new JsonObject().put("iid", "D1"));
      ReplyException refusedClear = assertInstanceOf(ReplyException.class,
          request(a, clear, new DeliveryOptions().addHeader("token", ClusterHarness.TOKEN)));
      assertEquals(401, refusedClear.failureCode());
      assertTrue(refusedClear.getMessage().startsWith("the admin token is refused in the clear while a cluster secret is set"),
          refusedClear.getMessage());
      for (NarwhalNode node : List.of(a, b)) {
        assertEquals("serving", ClusterHarness.engineIn(ClusterHarness.await(h.breaker(node)), "D1").getString("state"),
            "no refused command changed D1");
      }
    }
  }

  @Test
  void aForeignHandlerOnTheAdminAddressGetsNoTokenAndItsReplyIsNotBelieved() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(FLEET, fleet -> ClusterHarness.withSecret(fleet.put("recovery", RECOVERY)), (iid, o) -> { })) {
      HazelcastClusterManager manager = ClusterBootstrap.clusterManager(h.config().cluster(), false);
      Vertx intruder = ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, h.config().cluster(), manager, name -> null));
      try {
        List<String> received = new CopyOnWriteArrayList<>();
        ClusterHarness.await(intruder.eventBus().<JsonObject>consumer(Addresses.ADMIN, msg -> {
          received.add(msg.headers().entries() + " " + msg.body().encode());
          JsonObject engine = new JsonObject().put("iid", "D1").put("state", "draining").put("cause", "admin");
          msg.reply(new JsonObject().put("replica", "breaker-forged").put("engines", new io.vertx.core.json.JsonArray().add(engine))
              .put("effect", new JsonObject().put("iid", "D1").put("asked", "draining").put("seen", "draining").put("done", true))
              .put("mac", "AAAA").put("_by", "forged").put("_tag", "AAAA"));
        }).completion());

        AdminCliRun withSecret = admin(fleetFile(h.fleetJson()), "drain", "D1");
        assertEquals(2, withSecret.exit(), withSecret.out() + withSecret.err());
        assertTrue(!withSecret.out().contains("done"), withSecret.out());
        assertTrue(withSecret.err().startsWith("narwhal admin: drain D1: not believed: the reply does not verify with the cluster "
            + "secret (cluster.secret_file) (it claims to come from replica breaker-forged"), withSecret.err());

        JsonObject noSecret = h.fleetJson();
        noSecret.getJsonObject("cluster").remove("secret_file");
        AdminCliRun withTokenOnly = admin(fleetFile(noSecret), "drain", "D1");
        assertEquals(2, withTokenOnly.exit(), withTokenOnly.out() + withTokenOnly.err());
        assertTrue(!withTokenOnly.out().contains("done"), withTokenOnly.out());
        assertTrue(withTokenOnly.err().startsWith("narwhal admin: drain D1: not believed: the reply does not verify with the admin token"),
            withTokenOnly.err());

        assertEquals(2, received.size(), "the foreign handler was reached by both commands: " + received);
        for (String message : received) {
          assertTrue(!message.contains(ClusterHarness.TOKEN), "the admin token never reaches the foreign handler: " + message);
          assertTrue(message.contains("\"proof\":{\"at_ms\""), "a proof went instead: " + message);
        }
      } finally {
        intruder.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }
}
