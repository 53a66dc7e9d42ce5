package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import narwhal.common.bus.ClusterSeal;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Which engine answered which {@code /v1/responses} id: a follow-up naming it as {@code previous_response_id} must go
 * there, where vLLM keeps the response's state. Kept per replica (the {@value #LOCAL_BOUND} newest ids) and, on a
 * clustered replica, in the cluster's shared map {@value #MAP} for {@value #TTL_HOURS} hours (bounded per member by
 * conf/cluster.xml's eviction), so a follow-up that a load balancer sends to another replica finds its engine too. A
 * replica that is not clustered keeps the bounded local record only: Vert.x's local shared map would hold every id of
 * the last {@value #TTL_HOURS} hours, each with a timer. A lookup that finds nothing (an unknown id, an expired one,
 * the shared map not answering within {@value #LOOKUP_TIMEOUT_MS} ms, an entry whose tag does not verify with the cluster
 * secret) answers null.
 */
final class ResponseOwners {
  static final String MAP = "narwhal.response-owners";
  static final int LOCAL_BOUND = 100_000;
  static final int TTL_HOURS = 24;
  private static final long LOOKUP_TIMEOUT_MS = 1_000;

  private final Map<String, String> local = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
      return size() > LOCAL_BOUND;
    }
  };

  /**
   * Records that engine {@code iid} answered response {@code id}: here at once, in the cluster's map by the returned
   * future (which never fails; a write the shared state cannot take within a second leaves the local record only).
   */
  Future<Void> answered(Vertx vertx, String id, String iid) {
    synchronized (local) {
      local.put(id, iid);
    }
    if (!vertx.isClustered()) return Future.succeededFuture();
    ClusterSeal seal = ClusterSeal.of(vertx);
    String value = seal.enabled() ? seal.seal(MAP, id, new JsonObject().put("iid", iid)).encode() : iid;
    return shared(vertx).compose(map -> map.put(id, value, TimeUnit.HOURS.toMillis(TTL_HOURS)))
        .timeout(LOOKUP_TIMEOUT_MS, TimeUnit.MILLISECONDS).otherwiseEmpty();
  }

  /** The engine that answered response {@code id}, or null. */
  Future<String> owner(Vertx vertx, String id) {
    String iid;
    synchronized (local) {
      iid = local.get(id);
    }
    if (iid != null || !vertx.isClustered()) return Future.succeededFuture(iid);
    return shared(vertx).compose(map -> map.get(id)).map(text -> engine(ClusterSeal.of(vertx), id, text))
        .timeout(LOOKUP_TIMEOUT_MS, TimeUnit.MILLISECONDS).otherwise(err -> null);
  }

  /**
   * The engine a shared entry names: with a cluster secret, a tagged {@code {"iid"}} (one whose tag does not verify is
   * absent, docs/operations.md#threat-model); without, the iid itself.
   */
  private static String engine(ClusterSeal seal, String id, String text) {
    if (text == null) return null;
    if (!seal.enabled() && !text.startsWith("{")) return text;
    JsonObject json = seal.openText(MAP, id, text);
    return json == null ? null : json.getString("iid");
  }

  private static Future<AsyncMap<String, String>> shared(Vertx vertx) {
    return vertx.sharedData().getAsyncMap(MAP);
  }
}
