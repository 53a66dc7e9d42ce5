package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Membership of the router cluster that shares breaker state (CONTRACT §6.7): whether replicas
 * cluster at all, the cluster name, the seed members ({@code host} or {@code host:port}), and the
 * port and host this replica binds for cluster traffic.
 */
public record ClusterConfig(boolean enabled, String name, List<String> members, int port, String host) {

  static final Set<String> KEYS = Set.of("enabled", "name", "members", "port", "host");
  private static final String MEMBERS_EXPECTATION = "a non-empty list of \"host\" or \"host:port\"";

  public ClusterConfig {
    members = List.copyOf(members);
  }

  public static ClusterConfig defaults() {
    return new ClusterConfig(false, "narwhal", List.of("127.0.0.1"), 5701, "127.0.0.1");
  }

  static ClusterConfig read(SectionReader r) {
    ClusterConfig d = defaults();
    return new ClusterConfig(
        r.bool("enabled", d.enabled()),
        r.nonEmptyString("name", d.name()),
        r.has("members") ? members(r) : d.members(),
        r.integer("port", d.port(), 1, 65535),
        r.nonEmptyString("host", d.host()));
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
        .put("host", host);
  }
}
