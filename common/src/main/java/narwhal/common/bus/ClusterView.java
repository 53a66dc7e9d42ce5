package narwhal.common.bus;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.Shareable;

/**
 * How this replica stands in its cluster (docs/operations.md#what-the-cluster-remembers): the router members it sees
 * and how many it expects, and why the configured members refuse it, if they do (another {@code cluster.name},
 * another {@code cluster.tls.enabled}). Published by the launcher in the node's local shared data; a node that
 * is not clustered has {@link #SINGLE_NODE}. Read on any thread (metrics, {@code /ready}, {@code /narwhal/state}).
 */
public interface ClusterView extends Shareable {
  String MAP = "narwhal.cluster";
  String KEY = "view";

  /** Router replicas (full members) in the cluster this replica is in, itself included. */
  int membersSeen();

  /**
   * How many it should have: {@code cluster.expected_members}, the seed list's size, or with Kubernetes discovery the
   * service's ready endpoints; 0: no expectation.
   */
  int membersExpected();

  /** Why the members this replica is configured to join refuse it, or null when they do not. */
  String refusal();

  /** This replica's cluster address ({@code host:port} of its Hazelcast member), {@code local} when not clustered. */
  default String self() {
    return "local";
  }

  /** The router replicas' cluster addresses this replica sees, the oldest member first, itself included. */
  default java.util.List<String> routers() {
    return java.util.List.of(self());
  }

  /** Members of the cluster without a valid membership proof (docs/operations.md#threat-model); 0 without a cluster secret. */
  default int unverifiedMembers() {
    return 0;
  }

  /** True when the last look-up of the peers through the platform's discovery (Kubernetes) failed; see {@link #toJson}. */
  default boolean discoveryFailing() {
    return false;
  }

  JsonObject toJson();

  ClusterView SINGLE_NODE = new ClusterView() {
    @Override
    public int membersSeen() {
      return 1;
    }

    @Override
    public int membersExpected() {
      return 1;
    }

    @Override
    public String refusal() {
      return null;
    }

    @Override
    public JsonObject toJson() {
      return new JsonObject().put("clustered", false).put("members_seen", 1).put("members_expected", 1);
    }
  };

  /** The view published on this node, or {@link #SINGLE_NODE}. */
  static ClusterView of(Vertx vertx) {
    Object view = vertx.sharedData().getLocalMap(MAP).get(KEY);
    return view instanceof ClusterView v ? v : SINGLE_NODE;
  }
}
