package narwhal.common.bus;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.Shareable;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.logging.Logger;

/**
 * Authenticates what replicas write to the cluster's shared maps and publish on its event bus
 * (docs/operations.md#threat-model): with a {@link ClusterSecret}, each JSON value carries the writer's replica id
 * ({@value #BY}) and an HMAC-SHA256 ({@value #TAG}) over the cluster name, the map or address, the key and the value;
 * a value whose tag verifies with neither the current nor the previous secret is treated as absent, counted through
 * the hook given ({@code narwhal_cluster_forged_total{where}}) and logged once per claimed writer. Without a secret
 * values go unsigned and every value is taken, as before. Published by the launcher in the node's local shared data.
 */
public final class ClusterSeal implements Shareable {
  public static final String BY = "_by";
  public static final String TAG = "_tag";
  /** The maps and addresses whose values are sealed: the {@code where} of {@code narwhal_cluster_forged_total}. */
  public static final java.util.List<String> SEALED = java.util.List.of(SharedState.ENGINE_STATE_MAP, "narwhal.leases",
      "narwhal.engine-load", "narwhal.replicas", "narwhal.response-owners", "narwhal.cluster", "narwhal.members",
      "cluster.decisions_path", Addresses.FLEET_CHANGED, Addresses.STREAK_CHANGED, Addresses.LIVENESS_SWEPT, Addresses.PLACEMENT_SENT, Addresses.PLACEMENT_LOADS, Addresses.PLACEMENT_LISTINGS,
      Addresses.PLACEMENT_PREFIXES, Addresses.PLACEMENT_SNAPSHOT, Addresses.CONFIG_RELOAD, Addresses.ADMIN, Addresses.TENANT_USAGE);
  private static final String MAP = "narwhal.cluster";
  private static final String KEY = "seal";
  private static final Logger LOG = Logger.getLogger(ClusterSeal.class.getName());
  private static final int MAX_REPORTED = 100;
  /** No secret: values are written as they are and taken as they come. */
  public static final ClusterSeal OPEN = new ClusterSeal("", ClusterSecret.NONE, "", where -> { });

  private final String cluster;
  private final ClusterSecret secret;
  private final String replica;
  private final Consumer<String> onForged;
  private final Set<String> reported = ConcurrentHashMap.newKeySet();

  /**
   * @param replica  this replica's id, written with every value (its Hazelcast member UUID)
   * @param onForged called with the map or address of each value refused
   */
  public ClusterSeal(String cluster, ClusterSecret secret, String replica, Consumer<String> onForged) {
    this.cluster = cluster;
    this.secret = secret;
    this.replica = replica;
    this.onForged = onForged;
  }

  /** The seal published on this node, or {@link #OPEN}. */
  public static ClusterSeal of(Vertx vertx) {
    Object seal = vertx.sharedData().getLocalMap(MAP).get(KEY);
    return seal instanceof ClusterSeal s ? s : OPEN;
  }

  public void publishOn(Vertx vertx) {
    vertx.sharedData().getLocalMap(MAP).put(KEY, this);
  }

  public boolean enabled() {
    return secret.enabled();
  }

  public String replica() {
    return replica;
  }

  /** {@code value} with this replica's id and its tag for {@code where} (a map or address) and {@code key}; unchanged without a secret. */
  public JsonObject seal(String where, String key, JsonObject value) {
    if (!enabled()) return value;
    JsonObject signed = value.copy();
    signed.remove(TAG);
    signed.put(BY, replica);
    return signed.put(TAG, tag(secret.keys().get(0), where, key, signed));
  }

  /** A bus message's body, sealed for its address. */
  public JsonObject seal(String address, JsonObject body) {
    return seal(address, "", body);
  }

  /**
   * {@code value} if its tag verifies (or there is no secret), else null: counted, and logged once per claimed writer.
   */
  public JsonObject open(String where, String key, JsonObject value) {
    if (!enabled() || value == null) return value;
    if (value.getValue(TAG) instanceof String tag && value.getValue(BY) instanceof String) {
      byte[] given = tag.getBytes(StandardCharsets.US_ASCII);
      for (byte[] k : secret.keys()) {
        if (MessageDigest.isEqual(given, tag(k, where, key, value).getBytes(StandardCharsets.US_ASCII))) return value;
      }
    }
    forged(where, key, value);
    return null;
  }

  /** A bus message's body, opened for its address; null when it is not a JSON object or does not verify. */
  public JsonObject open(String address, Object body) {
    if (!(body instanceof JsonObject json)) return null;
    return open(address, "", json);
  }

  /** A map entry's text, parsed and opened; null when absent, not JSON, or forged. */
  public JsonObject openText(String map, String key, String text) {
    if (text == null) return null;
    JsonObject json;
    try {
      json = new JsonObject(text);
    } catch (RuntimeException malformed) {
      if (enabled()) forged(map, key, null);
      return null;
    }
    return open(map, key, json);
  }

  private void forged(String where, String key, JsonObject value) {
    onForged.accept(where);
    String by = value != null && value.getValue(BY) instanceof String b ? b : "(no writer id)";
    // bounded: a forger naming a new writer each time is counted, not logged without end
    if (reported.size() < MAX_REPORTED && reported.add(by)) {
      LOG.warning("cluster: refused a value in " + where + (key.isEmpty() ? "" : " key " + key) + " whose tag does not verify with "
          + "the cluster secret, claiming writer " + by + ": treated as absent (a member without the secret, or a replica "
          + "with another cluster.secret_file: config drift); further ones from this writer are only counted "
          + "(narwhal_cluster_forged_total)");
    }
  }

  private String tag(byte[] key, String where, String mapKey, JsonObject value) {
    JsonObject unsigned = value.copy();
    unsigned.remove(TAG);
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      for (String part : new String[] {cluster, where, mapKey}) {
        mac.update(part.getBytes(StandardCharsets.UTF_8));
        mac.update((byte) 0);
      }
      return Base64.getUrlEncoder().withoutPadding().encodeToString(mac.doFinal(unsigned.encode().getBytes(StandardCharsets.UTF_8)));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  /** An HMAC-SHA256 of {@code text} with the current secret (a membership proof); "" without a secret. */
  public String proof(String text) {
    if (!enabled()) return "";
    return tag(secret.keys().get(0), "membership", text, new JsonObject());
  }

  /** Whether {@code proof} is {@link #proof}'s for {@code text} with the current or the previous secret. */
  public boolean provenBy(String text, String proof) {
    if (!enabled() || proof == null) return false;
    for (byte[] k : secret.keys()) {
      if (MessageDigest.isEqual(proof.getBytes(StandardCharsets.US_ASCII),
          tag(k, "membership", text, new JsonObject()).getBytes(StandardCharsets.US_ASCII))) {
        return true;
      }
    }
    return false;
  }
}
