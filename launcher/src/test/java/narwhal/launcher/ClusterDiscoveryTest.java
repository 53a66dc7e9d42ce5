package narwhal.launcher;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.KubernetesConfig;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.config.ClusterConfig;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code cluster.discovery} and {@code cluster.public_host} down to the Hazelcast config and event-bus options they
 * produce, and two real members bound to the wildcard address that find and reach each other at the advertised one.
 */
@Timeout(90)
class ClusterDiscoveryTest {

  private static ClusterConfig cluster(JsonObject section) {
    return NarwhalConfig.fromJson(new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "B0").put("url", "http://127.0.0.1:9")))
        .put("cluster", section)).cluster();
  }

  @Test
  void kubernetesDiscoveryIsHazelcastsOwnWithServiceNamespaceAndPortAndTheOnlyJoin() {
    ClusterConfig c = cluster(new JsonObject().put("enabled", true).put("discovery", "kubernetes").put("port", 5801)
        .put("host", "0.0.0.0").put("kubernetes", new JsonObject().put("service_name", "narwhal-routers")
            .put("namespace", "inference")));
    Config config = ClusterBootstrap.hazelcastConfig(c, false);
    JoinConfig join = config.getNetworkConfig().getJoin();
    KubernetesConfig k8s = join.getKubernetesConfig();
    assertTrue(k8s.isEnabled());
    assertEquals(Map.of("service-name", "narwhal-routers", "namespace", "inference", "service-port", "5801",
        "expose-externally", "false"), k8s.getProperties(), "members are pods at their IPs: no node or service look-ups");
    assertFalse(join.getTcpIpConfig().isEnabled());
    assertFalse(join.getMulticastConfig().isEnabled());
    assertFalse(join.getAutoDetectionConfig().isEnabled());
    join.verify(); // Hazelcast's own check: exactly one join mechanism
    assertFalse(config.getNetworkConfig().getInterfaces().isEnabled(), "0.0.0.0 binds every interface");
    assertNull(config.getProperty("hazelcast.local.localAddress"));

    ClusterConfig ownNamespace = cluster(new JsonObject().put("discovery", "kubernetes")
        .put("kubernetes", new JsonObject().put("service_name", "routers")));
    assertEquals(Map.of("service-name", "routers", "service-port", "5701", "expose-externally", "false"),
        ClusterBootstrap.hazelcastConfig(ownNamespace, false).getNetworkConfig().getJoin().getKubernetesConfig().getProperties(),
        "no namespace: Hazelcast uses the pod's own");
  }

  @Test
  void tcpIpDiscoveryListsTheMembersAndLeavesKubernetesOff() {
    ClusterConfig c = cluster(new JsonObject().put("members", new JsonArray().add("10.0.0.1").add("10.0.0.2:5702"))
        .put("host", "10.0.0.1"));
    JoinConfig join = ClusterBootstrap.hazelcastConfig(c, false).getNetworkConfig().getJoin();
    assertTrue(join.getTcpIpConfig().isEnabled());
    assertEquals(List.of("10.0.0.1", "10.0.0.2:5702"), join.getTcpIpConfig().getMembers());
    assertFalse(join.getKubernetesConfig().isEnabled());
    join.verify();
  }

  @Test
  void publicHostIsWhatHazelcastAndTheEventBusAdvertise() {
    ClusterConfig c = cluster(new JsonObject().put("host", "0.0.0.0").put("public_host", "203.0.113.7"));
    assertEquals("203.0.113.7", c.advertisedHost());
    assertEquals("203.0.113.7", ClusterBootstrap.hazelcastConfig(c, false).getNetworkConfig().getPublicAddress());
    VertxOptions options = ClusterBootstrap.eventBus(new VertxOptions(), c, name -> null);
    assertEquals("0.0.0.0", options.getEventBusOptions().getHost());
    assertEquals("203.0.113.7", options.getEventBusOptions().getClusterPublicHost());

    ClusterConfig bound = cluster(new JsonObject().put("host", "127.0.0.1"));
    assertEquals("127.0.0.1", bound.advertisedHost());
    assertNull(ClusterBootstrap.hazelcastConfig(bound, false).getNetworkConfig().getPublicAddress());
    assertNull(ClusterBootstrap.eventBus(new VertxOptions(), bound, name -> null).getEventBusOptions().getClusterPublicHost());
  }

  @Test
  void twoMembersBoundToTheWildcardJoinAndTalkThroughThePublicHost() throws Exception {
    int port = ClusterPorts.base();
    ClusterConfig c = cluster(new JsonObject().put("enabled", true).put("name", "narwhal-public-" + UUID.randomUUID())
        .put("members", new JsonArray().add("127.0.0.1:" + port).add("127.0.0.1:" + (port + 1)))
        .put("port", port).put("host", "0.0.0.0").put("public_host", "127.0.0.1"));
    List<Vertx> members = new ArrayList<>();
    List<HazelcastClusterManager> managers = new ArrayList<>();
    try {
      for (int i = 0; i < 2; i++) {
        HazelcastClusterManager manager = ClusterBootstrap.clusterManager(c, false);
        managers.add(manager);
        members.add(ClusterHarness.await(ClusterBootstrap.start(new VertxOptions(), null, c, manager, name -> null)));
      }
      for (HazelcastClusterManager manager : managers) {
        assertEquals(2, manager.getNodes().size());
        assertEquals("127.0.0.1", manager.getHazelcastInstance().getCluster().getLocalMember().getAddress().getHost());
      }
      MessageConsumer<String> echo = members.get(1).eventBus().consumer("narwhal.test.public", msg -> msg.reply("pong"));
      ClusterHarness.await(echo.completion());
      assertEquals("pong", ClusterHarness.await(members.get(0).eventBus()
          .<String>request("narwhal.test.public", "ping", new DeliveryOptions().setSendTimeout(10_000)).map(m -> m.body())));
    } finally {
      for (int i = members.size() - 1; i >= 0; i--) {
        members.get(i).close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }
}
