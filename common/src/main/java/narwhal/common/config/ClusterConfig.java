package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Membership of the router cluster that shares breaker state (docs/architecture.md#what-lives-in-the-cluster): whether replicas
 * cluster at all, the cluster name, how members find each other ({@code discovery}: the seed
 * {@code members}, {@code host} or {@code host:port}, for {@code "tcp-ip"}; Hazelcast's own
 * Kubernetes discovery of a service's pods for {@code "kubernetes"}), the port and host this
 * replica binds for cluster traffic (the event bus binds the same host), the address it advertises
 * to the others when the bound one is not reachable as such ({@code public_host}: 0.0.0.0, NAT;
 * "" = {@code host}), optional TLS for the event bus between replicas, how the breaker guards its
 * shared-state operations, the file operator decisions are kept in across a full stop ({@code decisions_path}, "" =
 * none), how long a start waits for members that refuse this replica ({@code join_timeout_s}) and how many members
 * the cluster is expected to have ({@code expected_members}, 0 = the number of seed members).
 */
public record ClusterConfig(boolean enabled, String name, List<String> members, int port, String host,
                            String publicHost, Discovery discovery, Kubernetes kubernetes, Tls tls,
                            StateGuard sharedState, String decisionsPath, double joinTimeoutS, int expectedMembers,
                            String secretFile, String secretEnv, String previousSecretFile, int eventBusPort) {

  public static final String DEFAULT_NAME = "narwhal";
  public static final List<String> DEFAULT_MEMBERS = List.of("127.0.0.1");
  /** Hazelcast's own default port. */
  public static final int DEFAULT_PORT = 5701;
  public static final String DEFAULT_HOST = "127.0.0.1";
  static final double DEFAULT_JOIN_TIMEOUT_S = 30;
  /** 0: as many members as {@code members} names. */
  public static final int DEFAULT_EXPECTED_MEMBERS = 0;
  private static final String MEMBERS_EXPECTATION = "a non-empty list of \"host\" or \"host:port\"";
  private static final String PUBLIC_HOST_EXPECTATION = "\"\" or a host name or address without a port, not a wildcard";

  static final Key<ClusterConfig, Boolean> ENABLED = Key.bool("enabled", ClusterConfig::enabled, false).readAtStart();
  static final Key<ClusterConfig, String> NAME = Key.nonEmpty("name", ClusterConfig::name, DEFAULT_NAME).readAtStart();
  static final Key<ClusterConfig, List<String>> MEMBERS = Key.<ClusterConfig>strings("members", ClusterConfig::members,
      DEFAULT_MEMBERS, (r, n, d) -> r.has(n) ? members(r) : d).readAtStart();
  static final Key<ClusterConfig, Integer> PORT = Key.integer("port", ClusterConfig::port, DEFAULT_PORT, 1, 65535)
      .readAtStart();
  static final Key<ClusterConfig, String> HOST = Key.nonEmpty("host", ClusterConfig::host, DEFAULT_HOST).readAtStart();
  static final Key<ClusterConfig, String> PUBLIC_HOST = Key.text("public_host", ClusterConfig::publicHost, "",
      h -> h.isEmpty() || (AddressSyntax.isHostPort(h, false) && !AddressSyntax.isHostPort(h, true) && !isWildcard(h)),
      PUBLIC_HOST_EXPECTATION).readAtStart();
  static final Key<ClusterConfig, Discovery> DISCOVERY = Key.choice("discovery", ClusterConfig::discovery,
      Discovery.TCP_IP, List.of(Discovery.values()), Discovery::wireName).readAtStart();
  /** Its {@code service_name} is required with Kubernetes discovery: read in {@link #read}, which knows it. */
  static final Key<ClusterConfig, Kubernetes> KUBERNETES = Key.section("kubernetes", ClusterConfig::kubernetes,
      Kubernetes.SECTION, r -> Kubernetes.read(r, false));
  static final Key<ClusterConfig, Tls> TLS = Key.section("tls", ClusterConfig::tls, Tls.SECTION, Tls::read);
  static final Key<ClusterConfig, StateGuard> SHARED_STATE = Key.section("shared_state", ClusterConfig::sharedState,
      StateGuard.SECTION, StateGuard::read);
  static final Key<ClusterConfig, String> DECISIONS_PATH = Key.string("decisions_path", ClusterConfig::decisionsPath, "")
      .readAtStart();
  static final Key<ClusterConfig, Double> JOIN_TIMEOUT_S = Key.seconds("join_timeout_s", ClusterConfig::joinTimeoutS,
      DEFAULT_JOIN_TIMEOUT_S, v -> v >= 1 && v <= 3600, "a number of seconds from 1 to 3600").readAtStart();
  static final Key<ClusterConfig, Integer> EXPECTED_MEMBERS = Key.integer("expected_members",
      ClusterConfig::expectedMembers, DEFAULT_EXPECTED_MEMBERS, 0, 1000).readAtStart();
  /** The cluster secret (docs/operations.md#threat-model): a file re-read on change, or an environment variable. */
  static final Key<ClusterConfig, String> SECRET_FILE = Key.string("secret_file", ClusterConfig::secretFile, "").readAtStart();
  static final Key<ClusterConfig, String> SECRET_ENV = Key.string("secret_env", ClusterConfig::secretEnv, "").readAtStart();
  /** The secret before a rotation, accepted (never written) until every replica has the new one. */
  /** 0: a free port; a fixed one for a firewall or a Kubernetes NetworkPolicy that admits only the cluster's ports. */
  static final Key<ClusterConfig, Integer> EVENT_BUS_PORT = Key.integer("event_bus_port", ClusterConfig::eventBusPort, 0, 0, 65535)
      .readAtStart();
  static final Key<ClusterConfig, String> PREVIOUS_SECRET_FILE = Key.string("previous_secret_file",
      ClusterConfig::previousSecretFile, "").readAtStart();
  static final Section<ClusterConfig> SECTION = new Section<>(ENABLED, NAME, MEMBERS, PORT, HOST, PUBLIC_HOST,
      DISCOVERY, KUBERNETES, TLS, SHARED_STATE, DECISIONS_PATH, JOIN_TIMEOUT_S, EXPECTED_MEMBERS, SECRET_FILE, SECRET_ENV,
      PREVIOUS_SECRET_FILE, EVENT_BUS_PORT);

  /** How members find each other. */
  public enum Discovery {
    TCP_IP("tcp-ip"), KUBERNETES("kubernetes");

    private final String wireName;

    Discovery(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    static Discovery of(String wireName) {
      return wireName.equals(KUBERNETES.wireName) ? KUBERNETES : TCP_IP;
    }
  }

  public ClusterConfig {
    members = List.copyOf(members);
    Objects.requireNonNull(publicHost, "publicHost");
    Objects.requireNonNull(discovery, "discovery");
    Objects.requireNonNull(kubernetes, "kubernetes");
    Objects.requireNonNull(tls, "tls");
    Objects.requireNonNull(sharedState, "sharedState");
    Objects.requireNonNull(decisionsPath, "decisionsPath");
    Objects.requireNonNull(secretFile, "secretFile");
    Objects.requireNonNull(secretEnv, "secretEnv");
    Objects.requireNonNull(previousSecretFile, "previousSecretFile");
  }

  /** Without a cluster secret. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host, String publicHost,
                       Discovery discovery, Kubernetes kubernetes, Tls tls, StateGuard sharedState, String decisionsPath,
                       double joinTimeoutS, int expectedMembers) {
    this(enabled, name, members, port, host, publicHost, discovery, kubernetes, tls, sharedState, decisionsPath, joinTimeoutS,
        expectedMembers, "", "", "", 0);
  }

  /** Whether a cluster secret is configured (its file or its environment variable). */
  public boolean hasSecret() {
    return !secretFile.isEmpty() || !secretEnv.isEmpty();
  }

  /** Without a decisions file, with the default join timeout and expected members. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host,
                       String publicHost, Discovery discovery, Kubernetes kubernetes, Tls tls, StateGuard sharedState) {
    this(enabled, name, members, port, host, publicHost, discovery, kubernetes, tls, sharedState, "", DEFAULT_JOIN_TIMEOUT_S,
        DEFAULT_EXPECTED_MEMBERS);
  }

  /** A TCP-IP cluster advertising its bind address. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host, Tls tls,
                       StateGuard sharedState) {
    this(enabled, name, members, port, host, "", Discovery.TCP_IP, Kubernetes.defaults(), tls, sharedState);
  }

  /** A TCP-IP cluster advertising its bind address, with the default shared-state guard. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host, Tls tls) {
    this(enabled, name, members, port, host, tls, StateGuard.defaults());
  }

  /** A TCP-IP cluster advertising its bind address, without event-bus TLS. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host) {
    this(enabled, name, members, port, host, Tls.defaults());
  }

  public static ClusterConfig defaults() {
    return read(SectionReader.empty("cluster", SECTION));
  }

  public long joinTimeoutMs() {
    return Seconds.toMillis(joinTimeoutS);
  }

  /**
   * How many members the cluster should have: {@code expected_members}, or when 0 the number of seed members (TCP-IP;
   * a list of every replica's {@code host:port}), or 0 (no expectation) with Kubernetes discovery.
   */
  public int expectedMemberCount() {
    if (expectedMembers > 0) return expectedMembers;
    return discovery == Discovery.KUBERNETES ? 0 : members.size();
  }

  /** The address other members and the event bus reach this replica at. */
  public String advertisedHost() {
    return publicHost.isEmpty() ? host : publicHost;
  }

  static ClusterConfig read(SectionReader r) {
    Discovery discovery = r.get(DISCOVERY);
    return new ClusterConfig(r.get(ENABLED), r.get(NAME), r.get(MEMBERS), r.get(PORT), r.get(HOST), r.get(PUBLIC_HOST),
        discovery, Kubernetes.read(r.section(KUBERNETES.name(), Kubernetes.SECTION), discovery == Discovery.KUBERNETES),
        r.get(TLS), r.get(SHARED_STATE), r.get(DECISIONS_PATH), r.get(JOIN_TIMEOUT_S), r.get(EXPECTED_MEMBERS),
        r.get(SECRET_FILE), r.get(SECRET_ENV), r.get(PREVIOUS_SECRET_FILE), r.get(EVENT_BUS_PORT));
  }

  /** 0.0.0.0 or ::, which bind every interface but reach no one. */
  public static boolean isWildcard(String host) {
    return "0.0.0.0".equals(host) || "::".equals(host) || "[::]".equals(host);
  }

  private static List<String> members(SectionReader r) {
    JsonArray array = r.array("members", MEMBERS_EXPECTATION);
    if (array.isEmpty()) {
      throw r.invalid("members", MEMBERS_EXPECTATION);
    }
    List<String> members = new ArrayList<>();
    for (int i = 0; i < array.size(); i++) {
      Object member = array.getValue(i);
      if (!(member instanceof String) || !AddressSyntax.isHostPort((String) member, false)) {
        throw ConfigException.invalid(r.key("members") + "[" + i + "]", member,
            "\"host\" or \"host:port\"");
      }
      members.add((String) member);
    }
    return members;
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }

  /**
   * How the breaker guards every operation on the cluster's shared state ({@code cluster.shared_state}, a Vert.x
   * circuit breaker): an operation not done within {@code operation_timeout_s} fails; after
   * {@code failure_threshold} failures in a row the guard opens and the replica decides on its own book, queueing its
   * decisions for the cluster; after {@code reset_timeout_s} one operation is let through to try again, and when the
   * guard closes the replica resyncs with the cluster.
   */
  public record StateGuard(double operationTimeoutS, int failureThreshold, double resetTimeoutS) {

    public static final double DEFAULT_OPERATION_TIMEOUT_S = 0.5;
    public static final int DEFAULT_FAILURE_THRESHOLD = 3;
    public static final double DEFAULT_RESET_TIMEOUT_S = 2;

    static final Key<StateGuard, Double> OPERATION_TIMEOUT_S = Key.seconds("operation_timeout_s",
        StateGuard::operationTimeoutS, DEFAULT_OPERATION_TIMEOUT_S, v -> v >= 0.001 && v <= 60,
        "a number of seconds from 0.001 to 60").readAtStart();
    static final Key<StateGuard, Integer> FAILURE_THRESHOLD = Key.integer("failure_threshold",
        StateGuard::failureThreshold, DEFAULT_FAILURE_THRESHOLD, 1, 1000).readAtStart();
    static final Key<StateGuard, Double> RESET_TIMEOUT_S = Key.seconds("reset_timeout_s", StateGuard::resetTimeoutS,
        DEFAULT_RESET_TIMEOUT_S, v -> v >= 0.01 && v <= 3600, "a number of seconds from 0.01 to 3600").readAtStart();
    static final Section<StateGuard> SECTION = new Section<>(OPERATION_TIMEOUT_S, FAILURE_THRESHOLD, RESET_TIMEOUT_S);

    public static StateGuard defaults() {
      return read(SectionReader.empty("cluster.shared_state", SECTION));
    }

    public long operationTimeoutMs() {
      return Seconds.toMillis(operationTimeoutS);
    }

    public long resetTimeoutMs() {
      return Seconds.toMillis(resetTimeoutS);
    }

    static StateGuard read(SectionReader r) {
      return new StateGuard(r.get(OPERATION_TIMEOUT_S), r.get(FAILURE_THRESHOLD), r.get(RESET_TIMEOUT_S));
    }

    public JsonObject toJson() {
      return SECTION.toJson(this);
    }
  }

  /**
   * Hazelcast's Kubernetes discovery ({@code cluster.kubernetes}, used when {@code discovery} is {@code "kubernetes"}):
   * the members are the ready pods behind the service {@code service_name} in {@code namespace} ("" = the namespace
   * of the pod the replica runs in), found through the Kubernetes API (the pod's service account needs to read
   * endpoints). {@code api_url} is the Kubernetes API ("" = in-cluster: {@code KUBERNETES_SERVICE_HOST}), for
   * Hazelcast's look-up and the replica's own check of the same look-up ({@code PeerLookup}).
   */
  public record Kubernetes(String serviceName, String namespace, String apiUrl) {

    private static final String DNS_LABEL = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
    /** Required with Kubernetes discovery: {@link #read} is told whether it is used. */
    static final Key<Kubernetes, String> SERVICE_NAME = Key.text("service_name", Kubernetes::serviceName, "",
        name -> name.isEmpty() || name.matches(DNS_LABEL), "\"\" or a Kubernetes service name").readAtStart();
    static final Key<Kubernetes, String> NAMESPACE = Key.text("namespace", Kubernetes::namespace, "",
        ns -> ns.isEmpty() || ns.matches(DNS_LABEL), "\"\" (the pod's own namespace) or a Kubernetes namespace name")
        .readAtStart();
    static final Key<Kubernetes, String> API_URL = Key.text("api_url", Kubernetes::apiUrl, "",
        url -> url.isEmpty() || url.matches("https?://[^/\\s]+/?"), "\"\" (in-cluster) or http(s)://host[:port]").readAtStart();
    static final Section<Kubernetes> SECTION = new Section<>(SERVICE_NAME, NAMESPACE, API_URL);

    public Kubernetes {
      Objects.requireNonNull(serviceName, "serviceName");
      Objects.requireNonNull(namespace, "namespace");
      Objects.requireNonNull(apiUrl, "apiUrl");
    }

    public static Kubernetes defaults() {
      return read(SectionReader.empty("cluster.kubernetes", SECTION), false);
    }

    static Kubernetes read(SectionReader r, boolean used) {
      String serviceName = used ? r.text(SERVICE_NAME.name(), null, name -> name.matches(DNS_LABEL),
          "the name of the Kubernetes service of the router pods (cluster.discovery is \"kubernetes\")")
          : r.get(SERVICE_NAME);
      return new Kubernetes(serviceName, r.get(NAMESPACE), r.get(API_URL));
    }

    public JsonObject toJson() {
      return SECTION.toJson(this);
    }
  }

  /**
   * TLS on the event bus between replicas ({@code cluster.tls}): a PKCS12 key store holding this
   * replica's key and certificate, also used as the trust store, so every replica must present a
   * certificate the others' key stores trust (one shared cluster certificate, or one CA). The
   * password is read from the environment variable named by {@code key_store_password_env}, never
   * from the fleet file. Hazelcast's own member traffic (the shared maps) is not covered.
   */
  public record Tls(boolean enabled, String keyStore, String keyStorePasswordEnv) {

    public static final String DEFAULT_KEY_STORE_PASSWORD_ENV = "NARWHAL_CLUSTER_TLS_PASSWORD";
    static final Key<Tls, Boolean> ENABLED = Key.bool("enabled", Tls::enabled, false).readAtStart();
    /** Required when TLS is enabled: {@link #read} knows. */
    static final Key<Tls, String> KEY_STORE = Key.string("key_store", Tls::keyStore, "").readAtStart();
    static final Key<Tls, String> KEY_STORE_PASSWORD_ENV = Key.nonEmpty("key_store_password_env",
        Tls::keyStorePasswordEnv, DEFAULT_KEY_STORE_PASSWORD_ENV).readAtStart();
    static final Section<Tls> SECTION = new Section<>(ENABLED, KEY_STORE, KEY_STORE_PASSWORD_ENV);

    public Tls {
      Objects.requireNonNull(keyStore, "keyStore");
      Objects.requireNonNull(keyStorePasswordEnv, "keyStorePasswordEnv");
    }

    public static Tls defaults() {
      return read(SectionReader.empty("cluster.tls", SECTION));
    }

    static Tls read(SectionReader r) {
      boolean enabled = r.get(ENABLED);
      String keyStore = enabled ? r.text(KEY_STORE.name(), null, path -> !path.isBlank(),
          "the path of a PKCS12 key store (cluster.tls.enabled is true)") : r.get(KEY_STORE);
      return new Tls(enabled, keyStore, r.get(KEY_STORE_PASSWORD_ENV));
    }

    public JsonObject toJson() {
      return SECTION.toJson(this);
    }
  }
}
