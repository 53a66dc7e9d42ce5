package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

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
                            StateGuard sharedState, String decisionsPath, double joinTimeoutS, int expectedMembers) {

  static final Set<String> KEYS = Set.of("enabled", "name", "members", "port", "host", "public_host", "discovery",
      "kubernetes", "tls", "shared_state", "decisions_path", "join_timeout_s", "expected_members");
  static final double DEFAULT_JOIN_TIMEOUT_S = 30;
  private static final String MEMBERS_EXPECTATION = "a non-empty list of \"host\" or \"host:port\"";

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
  }

  /** Without a decisions file, with the default join timeout and expected members. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host,
                       String publicHost, Discovery discovery, Kubernetes kubernetes, Tls tls, StateGuard sharedState) {
    this(enabled, name, members, port, host, publicHost, discovery, kubernetes, tls, sharedState, "", DEFAULT_JOIN_TIMEOUT_S, 0);
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
    return new ClusterConfig(false, "narwhal", List.of("127.0.0.1"), 5701, "127.0.0.1", Tls.defaults(), StateGuard.defaults());
  }

  /** The same membership with clustering switched on (the {@code --cluster} flag). */
  public ClusterConfig enable() {
    return new ClusterConfig(true, name, members, port, host, publicHost, discovery, kubernetes, tls, sharedState,
        decisionsPath, joinTimeoutS, expectedMembers);
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
    ClusterConfig d = defaults();
    Discovery discovery = Discovery.of(r.oneOf("discovery", d.discovery().wireName(),
        List.of(Discovery.TCP_IP.wireName(), Discovery.KUBERNETES.wireName())));
    return new ClusterConfig(
        r.bool("enabled", d.enabled()),
        r.nonEmptyString("name", d.name()),
        r.has("members") ? members(r) : d.members(),
        r.integer("port", d.port(), 1, 65535),
        r.nonEmptyString("host", d.host()),
        r.text("public_host", d.publicHost(), h -> h.isEmpty() || (AddressSyntax.isHostPort(h, false)
            && !AddressSyntax.isHostPort(h, true) && !isWildcard(h)), "\"\" or a host name or address without a port, "
            + "not a wildcard"),
        discovery,
        Kubernetes.read(r.section("kubernetes", Kubernetes.KEYS), discovery == Discovery.KUBERNETES),
        Tls.read(r.section("tls", Tls.KEYS)),
        StateGuard.read(r.section("shared_state", StateGuard.KEYS)),
        r.anyString("decisions_path", ""),
        r.number("join_timeout_s", DEFAULT_JOIN_TIMEOUT_S, v -> v >= 1 && v <= 3600, "a number of seconds from 1 to 3600"),
        r.integer("expected_members", 0, 0, 1000));
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
    return new JsonObject()
        .put("enabled", enabled)
        .put("name", name)
        .put("members", new JsonArray(new ArrayList<>(members)))
        .put("port", port)
        .put("host", host)
        .put("public_host", publicHost)
        .put("discovery", discovery.wireName())
        .put("kubernetes", kubernetes.toJson())
        .put("tls", tls.toJson())
        .put("shared_state", sharedState.toJson())
        .put("decisions_path", decisionsPath)
        .put("join_timeout_s", Seconds.toJson(joinTimeoutS))
        .put("expected_members", expectedMembers);

  }

  /**
   * How the breaker guards every operation on the cluster's shared state ({@code cluster.shared_state}, a Vert.x
   * circuit breaker): an operation not done within {@code operation_timeout_s} fails; after
   * {@code failure_threshold} failures in a row the guard opens and the replica decides on its own book, queueing its
   * decisions for the cluster; after {@code reset_timeout_s} one operation is let through to try again, and when the
   * guard closes the replica resyncs with the cluster.
   */
  public record StateGuard(double operationTimeoutS, int failureThreshold, double resetTimeoutS) {

    static final Set<String> KEYS = Set.of("operation_timeout_s", "failure_threshold", "reset_timeout_s");

    public static StateGuard defaults() {
      return new StateGuard(0.5, 3, 2);
    }

    public long operationTimeoutMs() {
      return Seconds.toMillis(operationTimeoutS);
    }

    public long resetTimeoutMs() {
      return Seconds.toMillis(resetTimeoutS);
    }

    static StateGuard read(SectionReader r) {
      StateGuard d = defaults();
      return new StateGuard(
          r.number("operation_timeout_s", d.operationTimeoutS(), v -> v >= 0.001 && v <= 60, "a number of seconds from 0.001 to 60"),
          r.integer("failure_threshold", d.failureThreshold(), 1, 1000),
          r.number("reset_timeout_s", d.resetTimeoutS(), v -> v >= 0.01 && v <= 3600, "a number of seconds from 0.01 to 3600"));
    }

    public JsonObject toJson() {
      return new JsonObject()
          .put("operation_timeout_s", Seconds.toJson(operationTimeoutS))
          .put("failure_threshold", failureThreshold)
          .put("reset_timeout_s", Seconds.toJson(resetTimeoutS));
    }
  }

  /**
   * Hazelcast's Kubernetes discovery ({@code cluster.kubernetes}, used when {@code discovery} is {@code "kubernetes"}):
   * the members are the ready pods behind the service {@code service_name} in {@code namespace} ("" = the namespace
   * of the pod the replica runs in), found through the Kubernetes API (the pod's service account needs to read
   * endpoints).
   */
  public record Kubernetes(String serviceName, String namespace) {

    static final Set<String> KEYS = Set.of("service_name", "namespace");
    private static final String DNS_LABEL = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";

    public Kubernetes {
      Objects.requireNonNull(serviceName, "serviceName");
      Objects.requireNonNull(namespace, "namespace");
    }

    public static Kubernetes defaults() {
      return new Kubernetes("", "");
    }

    static Kubernetes read(SectionReader r, boolean used) {
      Kubernetes d = defaults();
      String serviceName = r.text("service_name", used ? null : d.serviceName(),
          name -> (!used && name.isEmpty()) || name.matches(DNS_LABEL),
          used ? "the name of the Kubernetes service of the router pods (cluster.discovery is \"kubernetes\")"
              : "\"\" or a Kubernetes service name");
      String namespace = r.text("namespace", d.namespace(), ns -> ns.isEmpty() || ns.matches(DNS_LABEL),
          "\"\" (the pod's own namespace) or a Kubernetes namespace name");
      return new Kubernetes(serviceName, namespace);
    }

    public JsonObject toJson() {
      return new JsonObject().put("service_name", serviceName).put("namespace", namespace);
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

    static final Set<String> KEYS = Set.of("enabled", "key_store", "key_store_password_env");

    public Tls {
      Objects.requireNonNull(keyStore, "keyStore");
      Objects.requireNonNull(keyStorePasswordEnv, "keyStorePasswordEnv");
    }

    public static Tls defaults() {
      return new Tls(false, "", "NARWHAL_CLUSTER_TLS_PASSWORD");
    }

    static Tls read(SectionReader r) {
      Tls d = defaults();
      boolean enabled = r.bool("enabled", d.enabled());
      String keyStore = r.text("key_store", enabled ? null : d.keyStore(), path -> !enabled || !path.isBlank(),
          enabled ? "the path of a PKCS12 key store (cluster.tls.enabled is true)" : "a string");
      return new Tls(enabled, keyStore, r.nonEmptyString("key_store_password_env", d.keyStorePasswordEnv()));
    }

    public JsonObject toJson() {
      return new JsonObject()
          .put("enabled", enabled)
          .put("key_store", keyStore)
          .put("key_store_password_env", keyStorePasswordEnv);
    }
  }
}
