package narwhal.common.bus;

import io.vertx.core.json.JsonObject;
import narwhal.common.config.ClusterConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link ClusterSeal} and {@link ClusterSecret}: what verifies, what is refused and counted, a rotation, bad secrets. */
class ClusterSealTest {
  @TempDir
  Path dir;
  private final List<String> forged = new ArrayList<>();

  private ClusterConfig cluster(String name, String secretFile, String previousFile) {
    return new ClusterConfig(true, name, List.of("127.0.0.1"), 5701, "127.0.0.1", "", ClusterConfig.Discovery.TCP_IP,
        ClusterConfig.Kubernetes.defaults(), ClusterConfig.Tls.defaults(), ClusterConfig.StateGuard.defaults(), "", 30, 0,
        secretFile, "", previousFile, 0);
  }

  private String file(String name, String text) throws Exception {
    return Files.writeString(dir.resolve(name), text).toString();
  }

  private ClusterSeal seal(String name, String secretFile, String previousFile) {
    return new ClusterSeal(name, ClusterSecret.load(cluster(name, secretFile, previousFile), env -> null), "replica-" + name, forged::add);
  }

  @Test
  void aSealedValueVerifiesAndAnyChangeOfItIsRefusedAndCounted() throws Exception {
    String a = file("a", "a".repeat(32));
    ClusterSeal writer = seal("prod", a, "");
    JsonObject value = new JsonObject().put("iid", "D0").put("state", "ejected").put("changed_ms", Long.MAX_VALUE).put("load", 0.25);
    JsonObject sealed = writer.seal("narwhal.engine-state", "D0", value);
    assertEquals("replica-prod", sealed.getString(ClusterSeal.BY));
    ClusterSeal reader = seal("prod", a, "");
    assertEquals(sealed, reader.openText("narwhal.engine-state", "D0", sealed.encode()), "survives the map's text");
    assertNull(reader.open("narwhal.engine-state", "D1", sealed), "under another key");
    assertNull(reader.open("narwhal.fleet.changed", "D0", sealed), "in another map or address");
    assertNull(reader.open("narwhal.engine-state", "D0", sealed.copy().put("state", "serving")), "edited");
    assertNull(reader.open("narwhal.engine-state", "D0", value), "unsigned");
    assertNull(seal("staging", a, "").open("narwhal.engine-state", "D0", sealed), "another cluster name");
    assertEquals(5, forged.size());
    assertEquals(value, ClusterSeal.OPEN.open("narwhal.engine-state", "D0", value), "without a secret everything is taken");
  }

  @Test
  void duringARotationBothSecretsAreAcceptedAndTheNewOneIsWritten() throws Exception {
    String old = file("old", "o".repeat(40));
    String fresh = file("new", "n".repeat(40));
    JsonObject byOld = seal("prod", old, "").seal("narwhal.leases", "probe.D0", new JsonObject().put("until", 5));
    ClusterSeal rotating = seal("prod", fresh, old);
    assertEquals(byOld, rotating.open("narwhal.leases", "probe.D0", byOld));
    JsonObject byNew = rotating.seal("narwhal.leases", "probe.D0", new JsonObject().put("until", 5));
    assertEquals(byNew, seal("prod", fresh, "").open("narwhal.leases", "probe.D0", byNew));
    assertNull(seal("prod", old, "").open("narwhal.leases", "probe.D0", byNew), "written with the new secret");
    assertTrue(rotating.provenBy("uuid-1", seal("prod", old, "").proof("uuid-1")));
  }

  @Test
  void aMissingUnreadableOrShortSecretIsRefusedNamingTheKey() throws Exception {
    String shortOne = file("short", "x".repeat(31));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> seal("prod", shortOne, ""));
    assertEquals("cluster.secret_file: the cluster secret in " + shortOne + " is 31 bytes; expected at least 32 "
        + "(e.g. openssl rand -base64 48)", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> seal("prod", dir.resolve("absent").toString(), ""));
    assertTrue(e.getMessage().startsWith("cluster.secret_file: cannot read the cluster secret "), e.getMessage());
    String good = file("good", "g".repeat(32));
    e = assertThrows(IllegalArgumentException.class, () -> seal("prod", good, shortOne));
    assertTrue(e.getMessage().startsWith("cluster.previous_secret_file: "), e.getMessage());
    ClusterConfig byEnv = new ClusterConfig(true, "prod", List.of("127.0.0.1"), 5701, "127.0.0.1", "", ClusterConfig.Discovery.TCP_IP,
        ClusterConfig.Kubernetes.defaults(), ClusterConfig.Tls.defaults(), ClusterConfig.StateGuard.defaults(), "", 30, 0,
        "", "NARWHAL_CLUSTER_SECRET", "", 0);
    e = assertThrows(IllegalArgumentException.class, () -> ClusterSecret.load(byEnv, env -> null));
    assertEquals("cluster.secret_env: the environment variable NARWHAL_CLUSTER_SECRET holding the cluster secret is not set", e.getMessage());
    assertTrue(ClusterSecret.load(byEnv, env -> "e".repeat(32)).enabled());
  }
}
