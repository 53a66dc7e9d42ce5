package narwhal.launcher;

import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.multimap.MultiMap;
import io.vertx.spi.cluster.hazelcast.impl.HazelcastRegistrationInfo;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.ClusterSeal;

import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;

/**
 * Intruders are seen (docs/operations.md#threat-model): with a cluster secret each replica keeps its membership proof
 * in the map {@value #MAP} — its member UUID and address, tagged with the secret under its UUID, so a proof copied
 * under another member's UUID does not verify — and rewrites it every {@value #EVERY_MS} ms (a deleted proof comes
 * back). Every {@value #EVERY_MS} ms it checks the cluster's members: one (lite members, i.e. admin commands,
 * included) that has shown no valid proof for {@value #GRACE_MS} ms since it joined is logged once with its address,
 * counted in the gauge {@code narwhal_cluster_unverified_members} (through {@link ClusterHealth}) and listed in {@code /narwhal/state}
 * ({@code cluster.unverified_members}); its event-bus handlers on Narwhal addresses are removed, at every check.
 */
final class MemberProofs {
  static final String MAP = "narwhal.members";
  static final long EVERY_MS = 2_000;
  static final long GRACE_MS = 4_000;
  /** Vert.x's cluster-wide map of event-bus handlers (address → the nodes that registered one). */
  private static final String SUBS = "__vertx.subs";
  /** The member attribute holding a member's Vert.x node id, which its subscriptions name. */
  private static final String VERTX_NODE_ID = "__vertx.nodeId";
  private static final Logger LOG = Logger.getLogger(MemberProofs.class.getName());

  private final HazelcastInstance hazelcast;
  private final ClusterSeal seal;
  private final Map<UUID, Long> firstSeen = new ConcurrentHashMap<>();
  private final Map<UUID, JsonObject> unverified = new ConcurrentHashMap<>();
  private final Set<UUID> logged = ConcurrentHashMap.newKeySet();

  private MemberProofs(HazelcastInstance hazelcast, ClusterSeal seal) {
    this.hazelcast = hazelcast;
    this.seal = seal;
  }

  /** Starts proving and checking; null without a secret (nothing can be proven). */
  static MemberProofs start(Vertx vertx, HazelcastInstance hazelcast, ClusterSeal seal) {
    MemberProofs proofs = new MemberProofs(hazelcast, seal);
    if (!seal.enabled()) return proofs;
    Runnable round = () -> vertx.<Void>executeBlocking(() -> {
      proofs.prove();
      proofs.check(System.currentTimeMillis());
      return null;
    }, false).onFailure(err -> LOG.warning("cluster: membership check failed (the next one retries): " + err));
    round.run();
    vertx.setPeriodic(EVERY_MS, t -> round.run());
    return proofs;
  }

  private IMap<String, String> map() {
    return hazelcast.getMap(MAP);
  }

  private void prove() {
    Member self = hazelcast.getCluster().getLocalMember();
    String key = self.getUuid().toString();
    map().set(key, seal.seal(MAP, key, new JsonObject().put("uuid", key).put("address", address(self))).encode());
  }

  void check(long nowMs) {
    Set<Member> members = hazelcast.getCluster().getMembers();
    firstSeen.keySet().removeIf(uuid -> members.stream().noneMatch(m -> m.getUuid().equals(uuid)));
    unverified.keySet().retainAll(firstSeen.keySet());
    for (Member member : members) {
      if (member.localMember()) continue;
      UUID uuid = member.getUuid();
      long since = firstSeen.computeIfAbsent(uuid, u -> nowMs);
      String key = uuid.toString();
      String text = map().get(key);
      JsonObject proof = text == null ? null : seal.openText(MAP, key, text);
      if (proof != null && key.equals(proof.getString("uuid"))) {
        if (unverified.remove(uuid) != null) LOG.info("cluster: member " + address(member) + " (" + key + ") now proves its membership");
        continue;
      }
      if (nowMs - since < GRACE_MS) continue;
      JsonObject entry = new JsonObject().put("address", address(member)).put("uuid", key).put("lite_member", member.isLiteMember())
          .put("since_ms", since);
      unverified.put(uuid, entry);
      String vertxNode = member.getAttribute(VERTX_NODE_ID);
      int purged = vertxNode == null ? 0 : purgeRegistrations(vertxNode);
      if (purged > 0) LOG.warning("cluster: removed " + purged + " event-bus registration(s) of unverified member " + address(member)
          + " on Narwhal addresses: no replica sends to it");
      if (logged.add(uuid)) {
        LOG.severe("cluster: member " + address(member) + " (" + key + (member.isLiteMember() ? ", lite member" : "")
            + ") has joined cluster \"" + hazelcast.getConfig().getClusterName() + "\" without a valid membership proof: "
            + "it does not hold the cluster secret (an intruder, or a replica with another cluster.secret_file); what it "
            + "writes and sends is refused, but it can still delete shared entries and slow the cluster "
            + "(docs/operations.md#threat-model)");
      }
    }
  }

  /**
   * Removes the member's handlers on Narwhal addresses ({@code narwhal.*}) from Vert.x's subscription map, so that no
   * replica's send or request reaches it (its registrations would otherwise take their turn in the round robin, an
   * admin command's token included). Reads Vert.x's Hazelcast subscription entries ({@code HazelcastRegistrationInfo},
   * an implementation class of vertx-hazelcast).
   */
  private int purgeRegistrations(String nodeId) {
    MultiMap<String, HazelcastRegistrationInfo> subs = hazelcast.getMultiMap(SUBS);
    int purged = 0;
    for (String address : subs.keySet()) {
      if (!address.startsWith("narwhal.")) continue;
      for (HazelcastRegistrationInfo info : subs.get(address)) {
        if (nodeId.equals(info.unwrap().nodeId()) && subs.remove(address, info)) purged++;
      }
    }
    return purged;
  }

  int unverifiedCount() {
    return unverified.size();
  }

  /** The members without a valid proof, for {@code /narwhal/state}. */
  JsonArray unverified() {
    return new JsonArray(unverified.values().stream().map(JsonObject::copy).toList());
  }

  private static String address(Member member) {
    return member.getAddress().getHost() + ":" + member.getAddress().getPort();
  }
}
