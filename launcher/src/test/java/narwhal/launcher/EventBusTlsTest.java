package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ClusterConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code cluster.tls}: two members whose event bus runs TLS with a shared self-signed PKCS12 key store (made here
 * with {@code keytool}) exchange a request and its reply; a member without TLS in the same Hazelcast cluster cannot
 * reach them over the event bus, nor can a member whose own self-signed certificate the replicas do not trust, however
 * permissive its own settings; a key store that holds no key or does not open is refused naming the key.
 */
@Timeout(90)
class EventBusTlsTest {
  static final String PASSWORD = "test-store-password";
  private static final UnaryOperator<String> ENV = name -> "NARWHAL_CLUSTER_TLS_PASSWORD".equals(name) ? PASSWORD : null;

  @TempDir
  Path dir;

  private Path keyStore() throws Exception {
    return keyStore(dir);
  }

  /** A PKCS12 key store with one self-signed certificate for 127.0.0.1, password {@value #PASSWORD}. */
  static Path keyStore(Path dir) throws Exception {
    return keyStore(dir, "cluster.p12");
  }

  static Path keyStore(Path dir, String file) throws Exception {
    Path store = dir.resolve(file);
    Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
        "-genkeypair", "-alias", "narwhal-cluster", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=narwhal-cluster", "-ext", "san=ip:127.0.0.1,dns:localhost", "-validity", "2",
        "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass", PASSWORD, "-keypass", PASSWORD)
        .redirectErrorStream(true).start();
    String output = new String(keytool.getInputStream().readAllBytes());
    assertTrue(keytool.waitFor(60, TimeUnit.SECONDS), "keytool finished");
    assertEquals(0, keytool.exitValue(), output);
    return store;
  }

  @Test
  void twoTlsMembersExchangeAMessageAndAPlainMemberCannotReachThem() throws Exception {
    Path store = keyStore();
    String name = "narwhal-tls-" + UUID.randomUUID();
    int port = ClusterPorts.base();
    ClusterConfig tls = new ClusterConfig(true, name, List.of("127.0.0.1"), port, "127.0.0.1",
        new ClusterConfig.Tls(true, store.toString(), "NARWHAL_CLUSTER_TLS_PASSWORD"));
    ClusterConfig plain = new ClusterConfig(true, name, List.of("127.0.0.1"), port, "127.0.0.1");
    List<Vertx> members = new ArrayList<>();
    try {
      Vertx a = join(tls, members);
      Vertx b = join(tls, members);
      assertTrue(a.isClustered() && b.isClustered());
      MessageConsumer<JsonObject> echo = b.eventBus().consumer("narwhal.test.echo",
          msg -> msg.reply(new JsonObject().put("echo", msg.body().getString("say")).put("tls", true)));
      ClusterHarness.await(echo.completion());

      JsonObject reply = ClusterHarness.await(a.eventBus().<JsonObject>request("narwhal.test.echo",
          new JsonObject().put("say", "over TLS"), new DeliveryOptions().setSendTimeout(10_000)).map(m -> m.body()));
      assertEquals("over TLS", reply.getString("echo"));

      Vertx outsider = join(plain, members);
      AssertionError refused = assertThrows(AssertionError.class, () -> ClusterHarness.await(outsider.eventBus()
          .<JsonObject>request("narwhal.test.echo", new JsonObject().put("say", "in clear"), new DeliveryOptions().setSendTimeout(3_000))));
      assertTrue(String.valueOf(refused.getCause()).contains("Timed out") || String.valueOf(refused.getCause()).contains("onnection"),
          "a member without the cluster's TLS gets no answer: " + refused.getCause());
    } finally {
      for (int i = members.size() - 1; i >= 0; i--) {
        members.get(i).close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void aMemberWithItsOwnSelfSignedCertificateCanNeitherSendNorReceive() throws Exception {
    Path store = keyStore();
    Path foreign = keyStore(dir, "foreign.p12");
    String name = "narwhal-tls-" + UUID.randomUUID();
    int port = ClusterPorts.base();
    ClusterConfig tls = new ClusterConfig(true, name, List.of("127.0.0.1"), port, "127.0.0.1",
        new ClusterConfig.Tls(true, store.toString(), "NARWHAL_CLUSTER_TLS_PASSWORD"));
    ClusterConfig intruderTls = new ClusterConfig(true, name, List.of("127.0.0.1"), port, "127.0.0.1",
        new ClusterConfig.Tls(true, foreign.toString(), "NARWHAL_CLUSTER_TLS_PASSWORD"));
    List<Vertx> members = new ArrayList<>();
    try {
      Vertx a = join(tls, members);
      Vertx b = join(tls, members);
      ClusterHarness.await(b.eventBus().<JsonObject>consumer("narwhal.test.echo", msg -> msg.reply(new JsonObject().put("echo", true)))
          .completion());
      // the intruder trusts anything and asks no client certificate: only the replicas' own checks can keep it out
      VertxOptions options = ClusterBootstrap.eventBus(new VertxOptions(), intruderTls, ENV);
      options.getEventBusOptions().setTrustAll(true).setClientAuth(io.vertx.core.http.ClientAuth.NONE);
      Vertx intruder = ClusterHarness.await(Vertx.builder().with(options)
          .withClusterManager(ClusterBootstrap.clusterManager(intruderTls, false)).buildClustered());
      members.add(intruder);
      List<String> received = new java.util.concurrent.CopyOnWriteArrayList<>();
      ClusterHarness.await(intruder.eventBus().<JsonObject>consumer("narwhal.test.intruder", msg -> {
        received.add(msg.body().encode());
        msg.reply(new JsonObject().put("forged", true));
      }).completion());

      AssertionError sent = assertThrows(AssertionError.class, () -> ClusterHarness.await(intruder.eventBus()
          .<JsonObject>request("narwhal.test.echo", new JsonObject(), new DeliveryOptions().setSendTimeout(3_000))));
      assertTrue(String.valueOf(sent.getCause()).contains("Timed out") || String.valueOf(sent.getCause()).contains("onnection"),
          "a replica refuses the intruder's client certificate: " + sent.getCause());
      AssertionError reached = assertThrows(AssertionError.class, () -> ClusterHarness.await(a.eventBus()
          .<JsonObject>request("narwhal.test.intruder", new JsonObject().put("token", "secret"), new DeliveryOptions().setSendTimeout(3_000))));
      assertTrue(String.valueOf(reached.getCause()).contains("Timed out") || String.valueOf(reached.getCause()).contains("onnection"),
          "a replica does not believe the intruder's server certificate: " + reached.getCause());
      assertEquals(List.of(), received, "nothing a replica sent reached the intruder");
      JsonObject reply = ClusterHarness.await(a.eventBus().<JsonObject>request("narwhal.test.echo", new JsonObject(),
          new DeliveryOptions().setSendTimeout(10_000)).map(m -> m.body()));
      assertTrue(reply.getBoolean("echo"), "the replicas still talk to each other");
    } finally {
      for (int i = members.size() - 1; i >= 0; i--) {
        members.get(i).close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void aKeyStoreWithoutAKeyOrThatCannotBeOpenedIsRefusedNamingTheKey() throws Exception {
    Path store = keyStore();
    ClusterConfig wrongPassword = new ClusterConfig(true, "x", List.of("127.0.0.1"), 5701, "127.0.0.1",
        new ClusterConfig.Tls(true, store.toString(), "NARWHAL_CLUSTER_TLS_PASSWORD"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ClusterBootstrap.eventBus(new VertxOptions(), wrongPassword, name -> "not-the-password"));
    assertTrue(e.getMessage().startsWith("cluster.tls.key_store: cannot open " + store), e.getMessage());

    Path trustOnly = dir.resolve("trust-only.p12");
    java.security.KeyStore source = java.security.KeyStore.getInstance("PKCS12");
    try (var in = java.nio.file.Files.newInputStream(store)) {
      source.load(in, PASSWORD.toCharArray());
    }
    java.security.KeyStore certificates = java.security.KeyStore.getInstance("PKCS12");
    certificates.load(null, null);
    certificates.setCertificateEntry("peer", source.getCertificate("narwhal-cluster"));
    try (var out = java.nio.file.Files.newOutputStream(trustOnly)) {
      certificates.store(out, PASSWORD.toCharArray());
    }
    ClusterConfig noKey = new ClusterConfig(true, "x", List.of("127.0.0.1"), 5701, "127.0.0.1",
        new ClusterConfig.Tls(true, trustOnly.toString(), "NARWHAL_CLUSTER_TLS_PASSWORD"));
    e = assertThrows(IllegalArgumentException.class, () -> ClusterBootstrap.eventBus(new VertxOptions(), noKey, ENV));
    assertEquals("cluster.tls.key_store: " + trustOnly + " holds no private key: expected this replica's key and certificate", e.getMessage());
    assertTrue(!ClusterBootstrap.eventBus(new VertxOptions(), wrongPassword, ENV).getEventBusOptions().isTrustAll(),
        "the bus client verifies the server's certificate");
  }

  @Test
  void aMissingPasswordOrKeyStoreIsRefusedBeforeJoining() {
    ClusterConfig noStore = new ClusterConfig(true, "x", List.of("127.0.0.1"), 5701, "127.0.0.1",
        new ClusterConfig.Tls(true, dir.resolve("absent.p12").toString(), "NARWHAL_CLUSTER_TLS_PASSWORD"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ClusterBootstrap.eventBus(new VertxOptions(), noStore, name -> null));
    assertEquals("cluster.tls: the environment variable NARWHAL_CLUSTER_TLS_PASSWORD (cluster.tls.key_store_password_env) "
        + "holding the key store password is not set", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> ClusterBootstrap.eventBus(new VertxOptions(), noStore, ENV));
    assertTrue(e.getMessage().startsWith("cluster.tls.key_store: cannot read "), e.getMessage());
  }

  private static Vertx join(ClusterConfig cluster, List<Vertx> members) {
    Vertx vertx = ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, cluster,
        ClusterBootstrap.clusterManager(cluster, false), ENV));
    members.add(vertx);
    return vertx;
  }
}
