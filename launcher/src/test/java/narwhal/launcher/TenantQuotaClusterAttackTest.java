package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterView;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cluster-wide quotas (docs/operations.md "Quotas") on a real Hazelcast cluster of three router replicas: each replica
 * leases "what is left of each quota ... taking a share in proportion to the tenant's demand on it".
 */
@Timeout(180)
class TenantQuotaClusterAttackTest {

  /**
   * A tenant with 30 requests a minute sends a burst of 30 to one replica of an otherwise idle, healthy three-replica
   * cluster (one client on one keep-alive connection does exactly that). The two other replicas have no demand, so
   * the tenant is under its quota for every one of the 30 and the docs' 95-100 % applies. On 0876563 a replica
   * whose quota map is empty publishes no report at all ({@code RouterVerticle.quotaExchange}: nothing published while
   * {@code mine.tenants().isEmpty()}), so the busy replica counts both idle replicas as silent, "asking as much as
   * itself", and leases a third: about 10 are admitted, the rest get 429 {@code rate_limit_exceeded} with a
   * {@code Retry-After} of about a minute while two thirds of the quota are unused. FAILS on 0876563.
   */
  @Test
  void aBurstWithinTheQuotaOnOneReplicaOfAnIdleClusterIsAdmitted() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> ClusterHarness.withSecret(json)
        .put("flow", new JsonObject().put("tenant_header", "x-tenant"))
        .put("tenants", new JsonObject()
            .put("warm", new JsonObject().put("requests_per_minute", 1_000_000))
            .put("team", new JsonObject().put("requests_per_minute", 30))), (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      NarwhalNode c = h.addReplica();
      h.awaitTrue("every replica sees three members", 30_000, () -> ClusterHarness.all(List.of(a, b, c),
          n -> Future.succeededFuture(ClusterView.of(n.vertx()).membersSeen() == 3)));
      h.awaitTrue("each replica leases with the three replicas' reports", 30_000, () -> ClusterHarness.all(List.of(a, b, c),
          n -> Future.succeededFuture(heard(n) == 3)));
      HttpClientAgent http = a.vertx().createHttpClient();
      // A counts a quota of its own, so it publishes its report every second; B hears A's next one: A's quotas have
      // been leased since with the three members in view
      assertTrue((int) status(a, http, "warm")[0] == 200);
      Promise<Void> heard = Promise.promise();
      b.vertx().eventBus().<Object>consumer(Addresses.TENANT_USAGE, m -> heard.tryComplete());
      ClusterHarness.await(heard.future());

      List<String> refused = new ArrayList<>();
      int admitted = 0;
      for (int i = 0; i < 30; i++) {
        Object[] r = status(a, http, "team");
        if ((int) r[0] == 200) admitted++;
        else refused.add(r[0] + " Retry-After " + r[1]);
      }
      // a burst beyond this replica's share is told to come back in a second (the quota is not spent cluster-wide),
      // by when the replica's lease follows the demand
      for (String r : refused) assertEquals("429 Retry-After 1", r, "refused while the quota is left: " + refused);
      for (int second = 0; second < 6 && admitted < 30; second++) {
        awaitSettled(a, b);
        for (int i = admitted; i < 30; i++) {
          if ((int) status(a, http, "team")[0] == 200) admitted++;
        }
      }
      assertTrue(admitted >= 28, "30 requests against a quota of 30 a minute, the other replicas idle, retried after"
          + " their Retry-After: " + admitted + " admitted; first answers refused: " + refused);
    }
  }

  /**
   * A tenant with {@code max_concurrent} 2 on a healthy three-replica cluster sends one request, to one replica, the
   * two others idle: one request is within "requests running at once, cluster-wide", so it runs. On 0876563 the busy
   * replica counts the two idle (silent) replicas as asking as much as itself, leases 2 / 3 of a request
   * ({@code concurrent + (max - concurrent) * 1/3}) and refuses every request, 429 {@code rate_limit_exceeded}
   * ({@code quota_concurrent}), second after second: any tenant whose {@code max_concurrent} is below the number of
   * replicas can never run a request unless its traffic is spread over every replica. FAILS on 0876563.
   */
  @Test
  void aTenantUnderItsMaxConcurrentRunsARequestOnAnIdleCluster() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> ClusterHarness.withSecret(json)
        .put("flow", new JsonObject().put("tenant_header", "x-tenant"))
        .put("tenants", new JsonObject()
            .put("warm", new JsonObject().put("requests_per_minute", 1_000_000))
            .put("pair", new JsonObject().put("max_concurrent", 2))), (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      NarwhalNode c = h.addReplica();
      h.awaitTrue("every replica sees three members", 30_000, () -> ClusterHarness.all(List.of(a, b, c),
          n -> Future.succeededFuture(ClusterView.of(n.vertx()).membersSeen() == 3)));
      HttpClientAgent http = a.vertx().createHttpClient();
      assertTrue((int) status(a, http, "warm")[0] == 200);
      Promise<Void> heard = Promise.promise();
      b.vertx().eventBus().<Object>consumer(Addresses.TENANT_USAGE, m -> heard.tryComplete());
      ClusterHarness.await(heard.future());
      List<Object> answers = new ArrayList<>();
      // one request at a time, over three of the replicas' settles (each heard as a report on B)
      for (int round = 0; round < 3; round++) {
        answers.add(status(a, http, "pair")[0]);
        awaitSettled(a, b);
      }
      assertTrue(answers.contains(200), "one request at a time against max_concurrent 2, on an idle cluster: " + answers);
    }
  }

  /** How many replicas' reports a replica's quotas count ({@code /narwhal/state} flow.quotas.replicas_heard). */
  private static int heard(NarwhalNode node) {
    JsonObject flow = narwhal.common.bus.FlowStatus.of(node.vertx());
    return flow == null ? 0 : flow.getJsonObject("quotas").getInteger("replicas_heard");
  }

  /** Waits until {@code observer} hears a quota report {@code replica} published: {@code replica} has settled since. */
  private static void awaitSettled(NarwhalNode replica, NarwhalNode observer) {
    String id = narwhal.common.bus.ClusterSeal.of(replica.vertx()).replica();
    Promise<Void> settled = Promise.promise();
    var consumer = observer.vertx().eventBus().<Object>consumer(Addresses.TENANT_USAGE, m -> {
      if (m.body() instanceof JsonObject body && id.equals(body.getString("origin"))) settled.tryComplete();
    });
    ClusterHarness.await(settled.future());
    ClusterHarness.await(consumer.unregister());
  }

  /** POSTs a small completion to {@code node} as tenant {@code tenant}; [status, Retry-After]. */
  private static Object[] status(NarwhalNode node, HttpClientAgent http, String tenant) {
    JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", 1);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json").putHeader("x-tenant", tenant);
    return ClusterHarness.await(Future.<Object[]>future(p -> node.vertx().runOnContext(v -> http.request(options)
        .compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(x -> new Object[] {resp.statusCode(), resp.getHeader("retry-after")}))
        .onComplete(p))));
  }
}
