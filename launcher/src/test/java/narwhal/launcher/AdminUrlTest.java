package narwhal.launcher;

import io.vertx.core.json.JsonObject;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal admin --url}: the command posts to a replica's admin endpoint on its health port (as through
 * {@code kubectl port-forward}) with no cluster join and no fleet file; a wrong token is refused with exit 1, an
 * endpoint nothing answers on is exit 2, and an engine command whose effect the shared state does not show is not
 * {@code done} (exit 3, saying what was seen).
 */
@Timeout(180)
class AdminUrlTest {
  private static final JsonObject RECOVERY = new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000)
      .put("liveness_every", 100_000);

  private static AdminCliRun admin(UnaryOperator<String> env, String... args) {
    return AdminCliRun.of(Path.of("no-such-dir", "narwhal.json"), env, args);
  }

  private static String url(NarwhalNode node) {
    return "http://127.0.0.1:" + node.healthPort();
  }

  private static JsonObject withHealthPort(JsonObject fleet) {
    return fleet.put("recovery", RECOVERY).put("server", fleet.getJsonObject("server").put("health_port", 0));
  }

  @Test
  void theCommandGoesToTheHealthPortWithoutJoiningTheCluster() {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), AdminUrlTest::withHealthPort,
        (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();

      AdminCliRun state = admin(ClusterHarness.ENV, "state", "--url", url(a));
      assertEquals(0, state.exit(), state.err());
      assertTrue(state.out().lines().anyMatch(l -> l.startsWith("D0") && l.contains("serving")), state.out());
      assertEquals(2, a.clusterMembers().size(), "no member joined for the command");

      AdminCliRun eject = admin(ClusterHarness.ENV, "eject", "D0", "--url", url(b) + "/");
      assertEquals(0, eject.exit(), eject.err());
      assertTrue(eject.out().startsWith("eject D0: done"), eject.out());
      h.awaitTrue("both replicas refuse D0", 10_000, () -> ClusterHarness.all(List.of(a, b), node -> h.refuses(node, "D0", Phase.DECODE)));

      AdminCliRun wrong = admin(name -> "NARWHAL_ADMIN_TOKEN".equals(name) ? "not-the-token" : null, "readmit", "D0", "--url", url(a));
      assertEquals(1, wrong.exit(), wrong.out());
      assertEquals("narwhal admin: refused (401): admin token missing or wrong", wrong.err().strip());
      AdminCliRun missing = admin(name -> null, "readmit", "D0", "--url", url(a));
      assertEquals(1, missing.exit());
      assertTrue(missing.err().contains("refused (401)") && missing.err().contains("$NARWHAL_ADMIN_TOKEN is not set"), missing.err());

      AdminCliRun readmit = admin(ClusterHarness.ENV, "readmit", "D0", "--url", url(a) + AdminCli.ENDPOINT_PATH, "--json");
      assertEquals(0, readmit.exit(), readmit.err());
      JsonObject reply = new JsonObject(readmit.out());
      assertEquals("serving", reply.getJsonObject("effect").getString("seen"));
      assertEquals("serving", ClusterHarness.engineIn(reply, "D0").getString("state"));

      AdminCliRun unknown = admin(ClusterHarness.ENV, "eject", "Z9", "--url", url(a));
      assertEquals(1, unknown.exit());
      assertEquals("narwhal admin: refused (400): eject: unknown engine Z9", unknown.err().strip());
    }
    AdminCliRun nobody = admin(ClusterHarness.ENV, "state", "--url", "http://127.0.0.1:9");
    assertEquals(2, nobody.exit());
    assertTrue(nobody.err().startsWith("narwhal admin: cannot reach http://127.0.0.1:9/narwhal/admin"), nobody.err());
    AdminCliRun notHttp = admin(ClusterHarness.ENV, "state", "--url", "ftp://127.0.0.1:21");
    assertEquals(1, notHttp.exit());
    assertTrue(notHttp.err().startsWith("narwhal admin: --url: ftp://127.0.0.1:21 is not valid: expected http://host:port"), notHttp.err());
  }

  @Test
  void anEngineCommandWhoseEffectTheSharedStateDoesNotShowIsNotDone() {
    JsonObject guard = new JsonObject().put("operation_timeout_s", 0.2).put("failure_threshold", 2).put("reset_timeout_s", 0.5);
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"),
        json -> withHealthPort(json).put("cluster", json.getJsonObject("cluster").put("shared_state", guard)), (iid, o) -> { })) {
      StallingSharedData outage = new StallingSharedData();
      NarwhalNode a = h.addReplica(NarwhalNode.PreflightMode.STRICT, outage::wrap);
      h.addReplica();
      outage.stall();
      h.awaitTrue("A's guard opens once its shared-state operations time out", 20_000,
          () -> h.breaker(a).map(s -> "open".equals(s.getString("shared_state"))));

      AdminCliRun eject = admin(ClusterHarness.ENV, "eject", "D1", "--url", url(a));
      assertEquals(3, eject.exit(), eject.out() + eject.err());
      assertTrue(!eject.out().contains("done"), eject.out());
      assertEquals("narwhal admin: eject D1: not done: asked D1 ejected, the shared state shows unreadable", eject.err().strip());
      outage.resume();
    }
  }
}
