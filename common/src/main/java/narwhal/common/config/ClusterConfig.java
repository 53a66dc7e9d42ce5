package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Membership of the router cluster that shares breaker state (docs/architecture.md#what-lives-in-the-cluster): whether replicas
 * cluster at all, the cluster name, the seed members ({@code host} or {@code host:port}), the
 * port and host this replica binds for cluster traffic (the event bus binds the same host), and
 * optional TLS for the event bus between replicas.
 */
public record ClusterConfig(boolean enabled, String name, List<String> members, int port, String host, Tls tls) {

  static final Set<String> KEYS = Set.of("enabled", "name", "members", "port", "host", "tls");
  private static final String MEMBERS_EXPECTATION = "a non-empty list of \"host\" or \"host:port\"";

  public ClusterConfig {
    members = List.copyOf(members);
    Objects.requireNonNull(tls, "tls");
  }

  /** A cluster without event-bus TLS. */
  public ClusterConfig(boolean enabled, String name, List<String> members, int port, String host) {
    this(enabled, name, members, port, host, Tls.defaults());
  }

  public static ClusterConfig defaults() {
    return new ClusterConfig(false, "narwhal", List.of("127.0.0.1"), 5701, "127.0.0.1", Tls.defaults());
  }

  /** The same membership with clustering switched on (the {@code --cluster} flag). */
  public ClusterConfig enable() {
    return new ClusterConfig(true, name, members, port, host, tls);
  }

  static ClusterConfig read(SectionReader r) {
    ClusterConfig d = defaults();
    return new ClusterConfig(
        r.bool("enabled", d.enabled()),
        r.nonEmptyString("name", d.name()),
        r.has("members") ? members(r) : d.members(),
        r.integer("port", d.port(), 1, 65535),
        r.nonEmptyString("host", d.host()),
        Tls.read(r.section("tls", Tls.KEYS)));
  }

  private static List<String> members(SectionReader r) {
    JsonArray array = r.array("members", MEMBERS_EXPECTATION);
    if (array.isEmpty()) {
      throw r.invalid("members", MEMBERS_EXPECTATION);
    }
    List<String> members = new ArrayList<>();
    for (int i = 0; i < array.size(); i++) {
      Object member = array.getValue(i);
      if (!(member instanceof String) || !Addresses.isHostPort((String) member, false)) {
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
        .put("tls", tls.toJson());
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
