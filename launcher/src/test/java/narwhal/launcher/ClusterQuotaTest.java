package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.FlowStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tenant's quota shared by three router replicas of a real Hazelcast cluster (docs/operations.md#sharing-a-fleet):
 * requests spread over the three are admitted up to the quota between them, not three times it; the ones past it get
 * 429 {@code rate_limit_exceeded} with {@code Retry-After}, whichever replica they reach.
 */
@Timeout(180)
class ClusterQuotaTest {
  private static final int PER_MINUTE = 30;

  @Test
  void threeReplicasAdmitAQuotaBetweenThemNotThreeTimesIt() throws Exception {
    Path keys = Files.createTempFile("narwhal-tenant", ".keys");
    Files.writeString(keys, "sk-metered");
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json.put("tenants",
        new JsonObject().put("metered", new JsonObject().put("api_key_file", keys.toString()).put("requests_per_minute", PER_MINUTE))),
        (iid, o) -> { })) {
      List<NarwhalNode> nodes = List.of(h.addReplica(), h.addReplica(), h.addReplica());
      h.awaitTrue("each replica counts the quota with the three replicas' reports", 30_000, () -> ClusterHarness.all(nodes,
          n -> Future.succeededFuture(heard(n) == 3)));
      int admitted = 0;
      int refused = 0;
      List<String> retryAfters = new ArrayList<>();
      // three rounds a second apart, each asking every replica for the whole quota: the leases settle in between
      for (int round = 0; round < 3; round++) {
        for (int i = 0; i < PER_MINUTE; i++) {
          NarwhalNode node = nodes.get(i % nodes.size());
          String[] answer = ClusterHarness.await(post(h, node));
          if ("200".equals(answer[0])) admitted++;
          else {
            assertEquals("429", answer[0], answer[2]);
            assertTrue(answer[2].contains("rate_limit_exceeded"), answer[2]);
            refused++;
            retryAfters.add(answer[1]);
          }
        }
        long wait = System.nanoTime() + 1_100_000_000L;
        h.awaitTrue("a settle interval", 5_000, () -> Future.succeededFuture(System.nanoTime() > wait));
      }
      assertTrue(admitted <= PER_MINUTE, "at most the quota across the three replicas: " + admitted + " admitted");
      assertTrue(admitted >= PER_MINUTE * 0.9, "within 10 % of it, once the leases settled: " + admitted + " admitted");
      assertEquals(3 * PER_MINUTE - admitted, refused);
      for (String retryAfter : retryAfters) {
        assertNotNull(retryAfter);
        assertTrue(Integer.parseInt(retryAfter) >= 1 && Integer.parseInt(retryAfter) <= 60, retryAfter);
      }
    }
  }

  /** How many replicas' reports a replica counts its tenants' quotas with ({@code /narwhal/state} flow.quotas). */
  private static int heard(NarwhalNode node) {
    JsonObject flow = FlowStatus.of(node.vertx());
    return flow == null ? 0 : flow.getJsonObject("quotas").getInteger("replicas_heard");
  }

  /** A completion with the tenant's key: status, Retry-After, body. */
  private static Future<String[]> post(ClusterHarness h, NarwhalNode node) {
    JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "whose quota").put("max_tokens", 2);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json").putHeader("authorization", "Bearer sk-metered");
    return h.send(options, body.toBuffer())
        .map(a -> new String[] {String.valueOf(a.status()), a.headers().get("retry-after"), a.body()});
  }
}
