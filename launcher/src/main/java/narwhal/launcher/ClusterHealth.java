package narwhal.launcher;

import com.hazelcast.cluster.Member;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.ClusterView;
import narwhal.common.config.ClusterConfig;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;

/**
 * Whether a clustered replica is where its {@code cluster.*} says (docs/operations.md#what-the-cluster-remembers): the
 * router members it sees against {@code cluster.expected_members}, and whether the members it is configured to join
 * refuse it. Hazelcast has no API signal for a join refused over the cluster name, only a log line on each side;
 * {@link HazelcastJoinLog} reads them and is the only class that knows their wording. Event-bus TLS is not
 * Hazelcast's: each member carries its {@code cluster.tls.enabled} as the member attribute {@value #TLS_ATTRIBUTE},
 * and the cluster's setting is its oldest router member's. A replica that is refused is not ready and, at start,
 * gives up after {@code cluster.join_timeout_s}; one whose peers are merely unreachable keeps serving and shows fewer
 * members than expected.
 */
final class ClusterHealth implements ClusterView {
  static final String TLS_ATTRIBUTE = "narwhal.event_bus_tls";
  private static final Logger LOG = Logger.getLogger(ClusterHealth.class.getName());

  private final ClusterConfig cluster;
  private HazelcastJoinLog joinLog;
  private final Map<String, Long> refusedBy = new ConcurrentHashMap<>();
  private final Set<String> strangers = ConcurrentHashMap.newKeySet();
  private volatile HazelcastClusterManager manager;
  private volatile MemberProofs proofs;
  private volatile PeerLookup peers;
  private String reported;

  private ClusterHealth(ClusterConfig cluster) {
    this.cluster = cluster;
  }

  /** Starts reading Hazelcast's join log for {@code cluster}: call before the replica joins. */
  static ClusterHealth watch(ClusterConfig cluster) {
    ClusterHealth health = new ClusterHealth(cluster);
    health.joinLog = HazelcastJoinLog.listen(cluster.name(), health::seen);
    return health;
  }

  /**
   * Once joined: publishes this view on the node, checks it every second (an error in the log when this replica
   * becomes refused, a warning for a replica of another cluster knocking), and completes when the configured members
   * accept this replica, or fails after {@code cluster.join_timeout_s} with a message naming both sides.
   */
  Future<Void> joined(Vertx vertx, HazelcastClusterManager manager, java.util.function.UnaryOperator<String> env) {
    this.manager = manager;
    if (cluster.discovery() == ClusterConfig.Discovery.KUBERNETES) {
      peers = PeerLookup.start(vertx, cluster.kubernetes(), env, PeerLookup.ACCOUNT);
    }
    vertx.sharedData().getLocalMap(ClusterView.MAP).put(ClusterView.KEY, this);
    vertx.setPeriodic(1_000, t -> report());
    Promise<Void> accepted = Promise.promise();
    long deadline = System.nanoTime() + cluster.joinTimeoutMs() * 1_000_000;
    String why = refusal();
    if (why != null) {
      LOG.severe("cluster: " + why + "; waiting up to " + cluster.joinTimeoutS() + " s (cluster.join_timeout_s) for them to accept it");
    }
    awaitAccepted(vertx, deadline, accepted);
    return accepted.future();
  }

  private void awaitAccepted(Vertx vertx, long deadline, Promise<Void> accepted) {
    String why = refusal();
    if (why == null) {
      accepted.complete();
    } else if (System.nanoTime() > deadline) {
      accepted.fail(new IllegalStateException("cluster: " + why + "; gave up after cluster.join_timeout_s = " + cluster.joinTimeoutS()
          + " s: give this replica the same cluster.name and cluster.tls.enabled as the others"));
    } else {
      vertx.setTimer(500, t -> awaitAccepted(vertx, deadline, accepted));
    }
  }

  /** The membership proofs whose unverified members {@link #toJson} lists. */
  void proofs(MemberProofs proofs) {
    this.proofs = proofs;
  }

  void close() {
    joinLog.close();
    PeerLookup lookup = peers;
    if (lookup != null) lookup.close();
  }

  private void report() {
    String why = refusal();
    if (why != null && !why.equals(reported)) LOG.severe("cluster: " + why + "; this replica is not ready until they accept it");
    if (why == null && reported != null) LOG.info("cluster: the members accept this replica again");
    reported = why;
  }

  private List<Member> routerMembers() {
    HazelcastClusterManager m = manager;
    if (m == null) return List.of();
    return m.getHazelcastInstance().getCluster().getMembers().stream().filter(member -> !member.isLiteMember()).toList();
  }

  private static String address(Member member) {
    return member.getAddress().getHost() + ":" + member.getAddress().getPort();
  }

  private String local() {
    HazelcastClusterManager m = manager;
    return m == null ? cluster.advertisedHost() + ":" + cluster.port() : address(m.getHazelcastInstance().getCluster().getLocalMember());
  }

  @Override
  public int membersSeen() {
    return routerMembers().size();
  }

  @Override
  public String self() {
    return local();
  }

  @Override
  public List<String> routers() {
    return routerMembers().stream().map(ClusterHealth::address).toList();
  }

  @Override
  public int membersExpected() {
    PeerLookup lookup = peers;
    if (cluster.expectedMemberCount() > 0 || lookup == null) return cluster.expectedMemberCount();
    return lookup.outcome().readyEndpoints();
  }

  @Override
  public boolean discoveryFailing() {
    PeerLookup lookup = peers;
    return lookup != null && lookup.outcome().error() != null;
  }

  @Override
  public String refusal() {
    List<Member> routers = routerMembers();
    routers.forEach(member -> refusedBy.remove(address(member)));
    if (routers.size() <= 1 && !refusedBy.isEmpty()) {
      return "the members at " + String.join(", ", refusedBy.keySet().stream().sorted().toList()) + " answer but refuse this replica ("
          + local() + ", cluster.name \"" + cluster.name() + "\"): their cluster has another cluster.name";
    }
    if (routers.isEmpty() || routers.get(0).localMember()) return null;
    Member oldest = routers.get(0);
    String theirs = oldest.getAttribute(TLS_ATTRIBUTE);
    String mine = String.valueOf(cluster.tls().enabled());
    if (theirs != null && !theirs.equals(mine)) {
      return "the cluster's oldest member " + address(oldest) + " runs with cluster.tls.enabled = " + theirs + ", this replica ("
          + local() + ") with " + mine + ": their event buses cannot talk to each other";
    }
    return null;
  }

  @Override
  public int unverifiedMembers() {
    MemberProofs p = proofs;
    return p == null ? 0 : p.unverifiedCount();
  }

  @Override
  public JsonObject toJson() {
    String why = refusal();
    JsonObject json = new JsonObject().put("clustered", true).put("name", cluster.name()).put("members_seen", membersSeen())
        .put("members_expected", membersExpected());
    if (why != null) json.put("refused", why);
    if (!strangers.isEmpty()) json.put("refused_to", new JsonArray(strangers.stream().sorted().toList()));
    MemberProofs p = proofs;
    if (p != null) json.put("unverified_members", p.unverified());
    PeerLookup lookup = peers;
    if (lookup != null) json.put("discovery", lookup.outcome().toJson());
    return json;
  }

  /** A refusal Hazelcast logged: this replica refused by the member at {@code address}, or a stranger knocking here. */
  private void seen(HazelcastJoinLog.Kind kind, String address) {
    if (kind == HazelcastJoinLog.Kind.REFUSED) {
      refusedBy.put(address, System.currentTimeMillis());
    } else if (strangers.add(address)) {
      LOG.warning("cluster: a replica at " + address + " with another cluster.name tried to join this cluster (\"" + cluster.name()
          + "\"); it is refused");
    }
  }
}
