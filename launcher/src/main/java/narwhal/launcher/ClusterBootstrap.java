package narwhal.launcher;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.KubernetesConfig;
import com.hazelcast.config.MapConfig;
import com.hazelcast.config.MergePolicyConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.config.XmlConfigBuilder;
import com.hazelcast.spi.merge.PutIfAbsentMergePolicy;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxBuilder;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.core.http.ClientAuth;
import io.vertx.core.net.PfxOptions;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.SharedState;
import narwhal.common.config.ClusterConfig;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * How a process joins the router cluster (docs/configuration.md {@code cluster.*}, docs/architecture.md#what-lives-in-the-cluster): the Hazelcast config is
 * {@code conf/cluster.xml} (or the file named by {@value #CONFIG_PROPERTY}, or the copy bundled in the jar) with the
 * fleet file's {@code cluster.*} keys applied, the event bus binds {@code cluster.host} on a free port (advertising
 * {@code cluster.public_host} when set), with TLS
 * between replicas when {@code cluster.tls.enabled}. Router replicas join as full members (they hold partitions and
 * backups of the shared state); the admin command joins as a lite member, which holds none. Each shared map's
 * split-brain merge policy is set here ({@link #MERGE_POLICIES}, docs/operations.md#partitions). With clustering off
 * the same call builds a plain Vert.x instance, so a single node runs the same code.
 */
public final class ClusterBootstrap {
  /** System property naming a Hazelcast XML file to start from instead of {@value #DEFAULT_FILE}. */
  public static final String CONFIG_PROPERTY = "narwhal.cluster.config";
  static final String DEFAULT_FILE = "conf/cluster.xml";
  private static final String RESOURCE = "/cluster.xml";
  /** How long Hazelcast tries to join before it gives up the start: {@code cluster.join_timeout_s}, whole seconds up. */
  static final String MAX_JOIN_PROPERTY = "hazelcast.max.join.seconds";
  /** conf/cluster.xml's {@code hazelcast.tcp.join.port.try.count}: the ports a member without one is tried on. */
  private static final int JOIN_PORTS = 10;
  /**
   * The split-brain merge policy of every map the replicas share (docs/operations.md#partitions), set here rather than
   * in the cluster file, since each follows from what its entries mean, not from the deployment.
   */
  static final Map<String, Class<?>> MERGE_POLICIES = mergePolicies();

  private ClusterBootstrap() {
  }

  /**
   * The Hazelcast config: the base file with {@code cluster.name}, {@code port}, {@code host}, {@code public_host} and
   * the discovery applied: TCP-IP to {@code members}, or Hazelcast's Kubernetes discovery of the pods behind
   * {@code cluster.kubernetes.service_name} (in {@code namespace}, on {@code cluster.port}). Multicast and
   * auto-detection stay off, and only the chosen join is enabled.
   */
  public static Config hazelcastConfig(ClusterConfig cluster, boolean liteMember) {
    Config config = baseConfig();
    config.setClusterName(cluster.name());
    // Hazelcast retries a join for 300 s by default; a port that answers the connection but not the join (an engine
    // listening after cluster.port) kept a start waiting that long: it gives up after cluster.join_timeout_s instead
    config.setProperty(MAX_JOIN_PROPERTY, String.valueOf((long) Math.ceil(cluster.joinTimeoutS())));
    config.setLiteMember(liteMember);
    config.getMemberAttributeConfig().setAttribute(ClusterHealth.TLS_ATTRIBUTE, String.valueOf(cluster.tls().enabled()));
    NetworkConfig network = config.getNetworkConfig();
    network.setPort(cluster.port()).setPortAutoIncrement(true);
    if (!ClusterConfig.isWildcard(cluster.host())) {
      config.setProperty("hazelcast.local.localAddress", cluster.host());
      network.getInterfaces().setEnabled(true).setInterfaces(List.of(cluster.host()));
    } else {
      config.getProperties().remove("hazelcast.local.localAddress");
      network.getInterfaces().setEnabled(false).clear();
    }
    if (!cluster.publicHost().isEmpty()) network.setPublicAddress(cluster.publicHost());
    JoinConfig join = network.getJoin();
    join.getAutoDetectionConfig().setEnabled(false);
    join.getMulticastConfig().setEnabled(false);
    boolean kubernetes = cluster.discovery() == ClusterConfig.Discovery.KUBERNETES;
    join.getTcpIpConfig().setEnabled(!kubernetes);
    if (kubernetes) {
      KubernetesConfig k8s = join.getKubernetesConfig().setEnabled(true)
          .setProperty("service-name", cluster.kubernetes().serviceName())
          .setProperty("service-port", String.valueOf(cluster.port()));
      if (!cluster.kubernetes().namespace().isEmpty()) k8s.setProperty("namespace", cluster.kubernetes().namespace());
      if (!cluster.kubernetes().apiUrl().isEmpty()) k8s.setProperty("kubernetes-master", cluster.kubernetes().apiUrl());
      // a plain-HTTP API (kubectl proxy beside the replica) has no certificate to check: Hazelcast would insist on the pod's CA file
      if (cluster.kubernetes().apiUrl().startsWith("http://")) k8s.setProperty("ca-certificate", "");
      // members are pods reached at their pod IPs: no look-up of public addresses (it needs RBAC on nodes and services,
      // and its failed retries added ~16 s to every start)
      k8s.setProperty("expose-externally", "false");
    } else {
      join.getKubernetesConfig().setEnabled(false);
      join.getTcpIpConfig().setMembers(cluster.members());
    }
    // Each map gets a config of its own (a copy of the one the file's patterns give it, backups included): setting the
    // policy on the config a pattern returns would set it for every map the pattern matches.
    MERGE_POLICIES.forEach((map, policy) -> config.addMapConfig(new MapConfig(config.getMapConfig(map)).setName(map)
        .setMergePolicyConfig(new MergePolicyConfig(policy.getName(), MergePolicyConfig.DEFAULT_BATCH_SIZE))));
    return config;
  }

  /**
   * A clustered start that failed, said in the fleet file's terms when Hazelcast gave up its join
   * ({@value #MAX_JOIN_PROPERTY}, set from {@code cluster.join_timeout_s}): what answered on the ports it tried was no
   * Narwhal replica. Any other failure is returned as it is.
   */
  static Throwable joinFailure(Throwable err, ClusterConfig cluster) {
    if (!joinGivenUp(err)) return err;
    List<String> portless = cluster.members().stream().filter(m -> !m.contains(":")).toList();
    String tried = portless.isEmpty() ? "" : "; members given without a port (" + String.join(", ", portless) + ") are tried on cluster.port "
        + cluster.port() + " and the " + (JOIN_PORTS - 1) + " ports after it";
    return new IllegalStateException("cluster: could not join the cluster within cluster.join_timeout_s = " + cluster.joinTimeoutS()
        + " s: something answers on a port this replica looks for members on (cluster.port " + cluster.port() + ", cluster.members "
        + cluster.members() + tried + ") but does not take part in the join (another service on that port, such as an engine, or a "
        + "replica that does not answer); give cluster.port a range no other service listens on, or each member its port", err);
  }

  /** True when {@code err}, or one of its causes, is Hazelcast's start ending for want of a join. */
  private static boolean joinGivenUp(Throwable err) {
    for (Throwable t = err; t != null; t = t.getCause()) {
      String message = String.valueOf(t.getMessage());
      if (message.contains("Node failed to start") || message.contains("Could not join cluster")) return true;
      if (t.getCause() == t) break;
    }
    return false;
  }

  private static Map<String, Class<?>> mergePolicies() {
    Map<String, Class<?>> policies = new LinkedHashMap<>();
    // Engine states and the fleet hold: the newer version (changed_ms, origin) wins, as in every breaker's writes.
    policies.put(SharedState.ENGINE_STATE_MAP, NewestStateMergePolicy.class);
    // Vert.x counters, i.e. the breaker's failure streaks: the longer streak.
    policies.put("__vertx.map.counter", LargerNumberMergePolicy.class);
    // Probe leases: the surviving side's lease stands (both run out at their "until").
    policies.put("narwhal.leases", PutIfAbsentMergePolicy.class);
    // Response ids are unique: every id either side recorded is kept.
    policies.put("narwhal.response-owners", PutIfAbsentMergePolicy.class);
    // Load readings: kept where only one side has them, re-read within one interval.
    policies.put("narwhal.engine-load", PutIfAbsentMergePolicy.class);
    return Collections.unmodifiableMap(policies);
  }

  public static HazelcastClusterManager clusterManager(ClusterConfig cluster, boolean liteMember) {
    return new HazelcastClusterManager(hazelcastConfig(cluster, liteMember));
  }

  /**
   * Sets the event bus of {@code options} for the cluster: bound to {@code cluster.host} on {@code cluster.event_bus_port} (0: a free one), and with
   * {@code cluster.tls} enabled, TLS verified at both ends (client authentication, and the client checks the server's
   * certificate), the PKCS12 key store serving as key and trust store once {@link ClusterKeyStore} has checked it.
   *
   * @param env reads the environment variable holding the key store password
   */
  public static VertxOptions eventBus(VertxOptions options, ClusterConfig cluster, UnaryOperator<String> env) {
    EventBusOptions bus = options.getEventBusOptions().setHost(cluster.host()).setPort(cluster.eventBusPort());
    if (!cluster.publicHost().isEmpty()) bus.setClusterPublicHost(cluster.publicHost());
    ClusterConfig.Tls tls = cluster.tls();
    if (tls.enabled()) {
      String password = env.apply(tls.keyStorePasswordEnv());
      if (password == null) {
        throw new IllegalArgumentException("cluster.tls: the environment variable " + tls.keyStorePasswordEnv()
            + " (cluster.tls.key_store_password_env) holding the key store password is not set");
      }
      if (!Files.isReadable(Path.of(tls.keyStore()))) {
        throw new IllegalArgumentException("cluster.tls.key_store: cannot read " + tls.keyStore());
      }
      ClusterKeyStore.check(Path.of(tls.keyStore()), password);
      PfxOptions store = new PfxOptions().setPath(tls.keyStore()).setPassword(password);
      // trustAll is Vert.x's default for the bus client: without this, any server certificate would be believed
      bus.setSsl(true).setKeyCertOptions(store).setTrustOptions(store.copy()).setTrustAll(false).setClientAuth(ClientAuth.REQUIRED);
    }
    return options;
  }

  /**
   * Builds Vert.x: clustered through {@code manager} when {@code cluster.enabled} (or when the caller forces it, as the
   * admin command does), otherwise a single node. {@code metrics} may be null.
   */
  public static Future<Vertx> start(VertxOptions options, VertxMetricsFactory metrics, ClusterConfig cluster,
                                    HazelcastClusterManager manager, UnaryOperator<String> env) {
    VertxBuilder builder;
    try {
      builder = Vertx.builder().with(manager == null ? options : eventBus(options, cluster, env));
    } catch (IllegalArgumentException e) {
      return Future.failedFuture(e);
    }
    if (metrics != null) builder.withMetrics(metrics);
    if (manager == null) return Future.succeededFuture(builder.build());
    return builder.withClusterManager(manager).buildClustered();
  }

  private static Config baseConfig() {
    String property = System.getProperty(CONFIG_PROPERTY);
    Path file = Path.of(property != null ? property : DEFAULT_FILE);
    if (property != null || Files.isRegularFile(file)) {
      try {
        return new XmlConfigBuilder(file.toString()).build();
      } catch (FileNotFoundException e) {
        throw new IllegalArgumentException("cluster config " + file + " not found (" + CONFIG_PROPERTY + ")");
      }
    }
    try (InputStream in = ClusterBootstrap.class.getResourceAsStream(RESOURCE)) {
      if (in == null) throw new IllegalStateException("no " + DEFAULT_FILE + " and no bundled cluster.xml");
      return new XmlConfigBuilder(in).build();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
