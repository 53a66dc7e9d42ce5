package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code flow.prefill_legs_max} at 1 through every way an attempt ends: a prefill that fails and is retried, a client
 * that leaves while its prefill hangs on the producer or while it is held behind it. Afterwards nothing stays counted
 * against the producer or held by it, and the next request is served.
 */
@Timeout(120)
class PrefillLegsLeakTest {

  private static RouterHarness start() throws Exception {
    return RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
            .put("flow", new JsonObject().put("prefill_legs_max", 1)),
        (iid, options) -> {
          if (iid.equals("P0")) options.setTtftBaseMs(100);
        });
  }

  private static List<Future<String>> send(RouterHarness h, int n, long idleTimeoutMs) {
    HttpClientAgent client = h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(2 * n));
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "leaks nothing")
        .put("max_tokens", 4).put("ignore_eos", true);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
        .putHeader("content-type", "application/json");
    if (idleTimeoutMs > 0) options.setIdleTimeout(idleTimeoutMs);
    List<Future<String>> replies = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      replies.add(h.onContext(() -> client.request(options).compose(req -> req.send(body.toBuffer()))
          .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b))));
    }
    return replies;
  }

  private static JsonObject flow(RouterHarness h) {
    return h.get("/narwhal/state").json().getJsonObject("flow");
  }

  private static void awaitNothingCounted(RouterHarness h) throws InterruptedException {
    while (flow(h).getInteger("held_by_producers") != 0 || !flow(h).getJsonObject("prefills_running").isEmpty()) {
      Thread.sleep(20);
    }
  }

  @Test
  void aFailedPrefillRetriedLeavesNothingCounted() throws Exception {
    try (RouterHarness h = start()) {
      h.engine("P0").faults().add(new JsonObject().put("kind", "status").put("status", 503).put("phase", "prefill").put("count", 2));
      List<Future<String>> replies = send(h, 4, 0);
      for (Future<String> reply : replies) {
        Future<String> done = reply.recover(err -> Future.succeededFuture("failed " + err));
        RouterHarness.await(done);
      }
      awaitNothingCounted(h);
      assertTrue(RouterHarness.await(send(h, 1, 0).get(0)).startsWith("200 "), "the producer takes the next prompt");
    }
  }

  @Test
  void clientsThatLeaveWhileTheirPrefillHangsOrTheyAreHeldLeaveNothingCounted() throws Exception {
    try (RouterHarness h = start()) {
      h.engine("P0").faults().add(new JsonObject().put("kind", "hang_before_headers").put("phase", "prefill").put("count", 1));
      List<Future<String>> replies = send(h, 3, 1500);
      while (flow(h).getInteger("held_by_producers") == 0) Thread.sleep(10);
      for (Future<String> reply : replies) {
        RouterHarness.await(reply.recover(err -> Future.succeededFuture("left")));
      }
      awaitNothingCounted(h);
      assertEquals(0, h.reservations(), "nothing left reserved");
      assertTrue(RouterHarness.await(send(h, 1, 0).get(0)).startsWith("200 "), "the producer takes the next prompt");
    }
  }

  @Test
  void attemptsHeldPastTheQueueTimeoutLeaveNothingCounted() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
            .put("flow", new JsonObject().put("prefill_legs_max", 1).put("queue_timeout_s", 0.3)),
        (iid, options) -> {
          if (iid.equals("P0")) options.setTtftBaseMs(1500);
        })) {
      List<Future<String>> replies = send(h, 3, 0);
      List<String> statuses = new ArrayList<>();
      for (Future<String> reply : replies) statuses.add(RouterHarness.await(reply).substring(0, 3));
      assertTrue(statuses.contains("429"), "the held ones timed out: " + statuses);
      awaitNothingCounted(h);
      assertEquals(0, h.reservations(), "nothing left reserved");
      assertTrue(RouterHarness.await(send(h, 1, 0).get(0)).startsWith("200 "), "the producer takes the next prompt");
    }
  }

  @Test
  void aBatchPromptLeavesNothingCounted() throws Exception {
    try (RouterHarness h = start()) {
      JsonObject body = new JsonObject().put("model", RouterHarness.MODEL)
          .put("prompt", new io.vertx.core.json.JsonArray().add("one").add("two").add("three")).put("max_tokens", 2)
          .put("ignore_eos", true);
      HttpClientAgent client = h.vertx.createHttpClient();
      RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST)
          .setAbsoluteURI(h.routerUrl() + "/v1/completions").putHeader("content-type", "application/json");
      String reply = RouterHarness.await(h.onContext(() -> client.request(options).compose(req -> req.send(body.toBuffer()))
          .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b))));
      assertTrue(reply.startsWith("200 "), reply);
      awaitNothingCounted(h);
      assertEquals(1L, h.engine("P0").stats().getLong("peak_requests_in_progress"),
          "the batch's prompts reach the producer one at a time: " + h.engine("P0").stats().encode());
    }
  }
}
