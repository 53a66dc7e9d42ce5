package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A {@code /v1/responses} follow-up reaches the engine that holds its previous response whichever replica a load
 * balancer sends it to (docs/operations.md#endpoints-an-engine-runs-whole), on a real two-member cluster: the
 * response is created through replica A, its follow-ups and reads go through replica B, which learns the engine from
 * the cluster's map {@code narwhal.response-owners}.
 */
@Timeout(120)
class ClusterResponsesTest {
  private record Reply(int status, JsonObject json) {
  }

  @Test
  void aFollowUpThroughAnotherReplicaReachesTheEngineOfItsPreviousResponse() throws Exception {
    // with a cluster secret: the response owners are tagged and verified
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode", "D2:decode"), json -> ClusterHarness.withSecret(json)
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 100_000).put("liveness_every", 100_000)),
        (iid, o) -> { })) {
      NarwhalNode a = h.addReplica();
      NarwhalNode b = h.addReplica();
      HttpClientAgent http = h.engineVertx.createHttpClient();
      try {
        for (int turn = 0; turn < 3; turn++) {
          h.engines.values().forEach(e -> e.clearRequests());
          Reply first = post(h, http, a, "/v1/responses", new JsonObject().put("model", ClusterHarness.MODEL)
              .put("input", "Where do narwhals live? " + turn).put("max_output_tokens", 4));
          assertEquals(200, first.status(), first.json().encode());
          String id = first.json().getString("id");
          String owner = ranOnIn(h, "/v1/responses");
          for (int i = 0; i < 3; i++) {
            h.engines.values().forEach(e -> e.clearRequests());
            Reply next = post(h, http, b, "/v1/responses", new JsonObject().put("model", ClusterHarness.MODEL)
                .put("input", "And what do they eat?").put("previous_response_id", id).put("max_output_tokens", 4));
            assertEquals(200, next.status(), "the follow-up through replica B: " + next.json().encode());
            assertEquals(id, next.json().getString("previous_response_id"));
            assertEquals(owner, ranOnIn(h, "/v1/responses"), "it ran where its previous response lives");
          }
          Reply read = get(h, http, b, "/v1/responses/" + id);
          assertEquals(200, read.status(), read.json().encode());
          assertEquals(first.json(), read.json(), "read through replica B from the engine that answered it");
        }
      } finally {
        ClusterHarness.await(http.close());
      }
    }
  }

  /** The one engine that logged a request on {@code path} since the last clear. */
  private static String ranOnIn(ClusterHarness h, String path) {
    List<String> seen = new ArrayList<>();
    h.engines.forEach((iid, e) -> e.requests().stream().filter(r -> path.equals(r.getString("path"))).forEach(r -> seen.add(iid)));
    assertEquals(1, seen.size(), path + " ran on " + seen);
    return seen.get(0);
  }

  private static Reply post(ClusterHarness h, HttpClientAgent http, NarwhalNode node, String path, JsonObject body) {
    return send(h, http, node, HttpMethod.POST, path, body);
  }

  private static Reply get(ClusterHarness h, HttpClientAgent http, NarwhalNode node, String path) {
    return send(h, http, node, HttpMethod.GET, path, null);
  }

  /** One exchange with a replica's router, wired on a Vert.x context. */
  private static Reply send(ClusterHarness h, HttpClientAgent http, NarwhalNode node, HttpMethod method, String path, JsonObject body) {
    RequestOptions options = new RequestOptions().setMethod(method).setHost("127.0.0.1").setPort(node.port()).setURI(path)
        .putHeader("content-type", "application/json");
    return ClusterHarness.await(Future.<Reply>future(p -> h.engineVertx.getOrCreateContext().runOnContext(v -> http.request(options)
        .compose(req -> body == null ? req.send() : req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> new Reply(resp.statusCode(), new JsonObject(b))))
        .onComplete(p))));
  }
}
