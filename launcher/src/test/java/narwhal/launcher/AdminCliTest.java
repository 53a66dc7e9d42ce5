package narwhal.launcher;

import io.vertx.core.json.JsonObject;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code narwhal admin} against a running two-replica cluster: it joins as a lite member, sends one message with the
 * token from the environment variable the fleet file names, prints the reply as a table or JSON, and leaves; a wrong
 * token is refused with 401 and a non-zero exit.
 */
@Timeout(120)
class AdminCliTest {
  private static ClusterHarness h;
  private static Path fleetFile;

  @BeforeAll
  static void cluster() throws Exception {
    h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json.put("recovery",
        new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)), (iid, o) -> { });
    h.addReplica();
    h.addReplica();
    fleetFile = Files.createTempFile("narwhal-admin-fleet", ".json");
    Files.writeString(fleetFile, h.fleetJson().encodePrettily());
  }

  @AfterAll
  static void stop() {
    h.close();
  }

  private static AdminCliRun admin(UnaryOperator<String> env, String... args) {
    return admin(fleetFile, env, args);
  }

  private static AdminCliRun admin(Path fleet, UnaryOperator<String> env, String... args) {
    return AdminCliRun.of(fleet, env, args);
  }

  @Test
  void stateThenEjectThenAWrongTokenIsRefused() {
    AdminCliRun state = admin(ClusterHarness.ENV, "state");
    assertEquals(0, state.exit(), state.err());
    assertTrue(state.out().contains("ENGINE") && state.out().lines().anyMatch(l -> l.startsWith("D0") && l.contains("serving")),
        state.out());

    AdminCliRun eject = admin(ClusterHarness.ENV, "eject", "D0");
    assertEquals(0, eject.exit(), eject.err());
    assertTrue(eject.out().startsWith("eject D0: done"), eject.out());
    assertTrue(eject.out().lines().anyMatch(l -> l.startsWith("D0") && l.contains("ejected") && l.contains("admin")), eject.out());
    h.awaitTrue("both replicas refuse D0", 10_000, () -> ClusterHarness.all(h.replicas, node -> h.refuses(node, "D0", Phase.DECODE)));

    AdminCliRun wrong = admin(name -> "NARWHAL_ADMIN_TOKEN".equals(name) ? "not-the-token" : null, "readmit", "D0");
    assertEquals(1, wrong.exit());
    assertEquals("narwhal admin: refused (401): admin token missing or wrong", wrong.err().strip());

    AdminCliRun missing = admin(name -> null, "readmit", "D0", "--json");
    assertEquals(1, missing.exit());
    assertEquals(401, new JsonObject(missing.out()).getJsonObject("error").getInteger("code"));
    assertTrue(missing.err().contains("$NARWHAL_ADMIN_TOKEN is not set"), missing.err());

    AdminCliRun json = admin(ClusterHarness.ENV, "readmit", "D0", "--json");
    assertEquals(0, json.exit(), json.err());
    JsonObject reply = new JsonObject(json.out());
    assertEquals("serving", ClusterHarness.engineIn(reply, "D0").getString("state"));
    h.awaitTrue("the admin member left", 10_000,
        () -> io.vertx.core.Future.succeededFuture(h.replica(0).clusterMembers().size() == 2));
  }

  @Test
  void argumentsAreCheckedBeforeJoiningAndBadOnesExitOne() {
    AdminCliRun noIid = admin(ClusterHarness.ENV, "eject");
    assertEquals(1, noIid.exit());
    assertEquals("narwhal admin: eject needs the engine's iid, e.g. narwhal admin eject D0", noIid.err().strip());
    AdminCliRun noSeconds = admin(ClusterHarness.ENV, "quarantine", "D1");
    assertEquals(1, noSeconds.exit());
    assertEquals("narwhal admin: quarantine needs --seconds S with 0.001 <= S <= 31536000 (a year)", noSeconds.err().strip());
    AdminCliRun forever = admin(ClusterHarness.ENV, "quarantine", "D1", "--seconds", "1e18");
    assertEquals(1, forever.exit(), "no overflow to year -292274998");
    AdminCliRun unknown = admin(ClusterHarness.ENV, "explode");
    assertEquals(1, unknown.exit());
    assertTrue(unknown.err().contains("\"explode\" is not a command"), unknown.err());
    assertEquals(1, admin(ClusterHarness.ENV, "quarantine", "D1", "--seconds", "abc").exit(), "a picocli parse error is a bad argument too");
    assertEquals(1, admin(ClusterHarness.ENV, "state", "--timeout=0").exit());
    AdminCliRun forceState = admin(ClusterHarness.ENV, "state", "--force");
    assertEquals(1, forceState.exit());
    assertEquals("narwhal admin: --force applies to eject, quarantine and drain only", forceState.err().strip());
  }

  @Test
  void theLastDecodeEngineNeedsForceAndTheCommandWorksWhileTheRestOfTheFleetFileIsInvalid() throws Exception {
    Path broken = Files.createTempFile("narwhal-admin-broken", ".json");
    Files.writeString(broken, h.fleetJson().put("serving", new JsonObject().put("max_attempts", "five")).encodePrettily());
    AdminCliRun state = admin(broken, ClusterHarness.ENV, "state");
    assertEquals(0, state.exit(), "only cluster.* and admin.* matter to the admin command: " + state.err());

    assertEquals(0, admin(ClusterHarness.ENV, "eject", "D0").exit());
    AdminCliRun last = admin(ClusterHarness.ENV, "eject", "D1");
    assertEquals(1, last.exit(), last.out());
    assertEquals("narwhal admin: refused (400): eject D1 refused: it is the last serving engine that can take the decode phase,"
        + " so every request would fail; repeat with --force to do it anyway", last.err().strip());
    assertTrue(admin(ClusterHarness.ENV, "state").out().lines().anyMatch(l -> l.startsWith("D1") && l.contains("serving")),
        "the refused command changed nothing");
    AdminCliRun forced = admin(ClusterHarness.ENV, "drain", "D1", "--force");
    assertEquals(0, forced.exit(), forced.err());
    h.awaitTrue("both replicas refuse D1", 10_000, () -> ClusterHarness.all(h.replicas, node -> h.refuses(node, "D1", Phase.DECODE)));

    assertEquals(0, admin(ClusterHarness.ENV, "readmit", "D0").exit());
    AdminCliRun readmitDraining = admin(ClusterHarness.ENV, "readmit", "D1");
    assertEquals(1, readmitDraining.exit(), "a drained engine is undrained, through the checks");
    assertEquals(0, admin(ClusterHarness.ENV, "undrain", "D1").exit());
    h.awaitTrue("both replicas place on D1 again", 10_000,
        () -> ClusterHarness.all(h.replicas, node -> h.refuses(node, "D1", Phase.DECODE).map(refused -> !refused)));
  }

  @Test
  void argumentsPicocliCannotParseExitOneThroughTheNarwhalCommandToo() {
    for (String[] args : List.of(new String[] {"admin", "eject", "P0", "P1"}, new String[] {"admin", "quarantine", "P0", "--seconds", "0x10"})) {
      StringWriter err = new StringWriter();
      CommandLine cli = NarwhalCommand.commandLine(new NarwhalCommand()).setErr(new PrintWriter(err, true));
      assertEquals(1, cli.execute(args), "bad arguments are exit 1, 2 is \"could not ask\": " + err);
      assertTrue(err.toString().startsWith("narwhal admin: "), err.toString());
    }
  }
}
