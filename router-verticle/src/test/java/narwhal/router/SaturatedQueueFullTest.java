package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.LocalPlacement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attack on issue 44, end to end with real engines: "At most flow.max_queued requests wait ... one more sheds the
 * newest waiting attempt of the tenant with the most waiting (429 queue_full)" (docs/operations.md#sharing-a-fleet).
 * A decode engine running one sequence at a time fills its queue to {@code flow.engine_queue_max}; a burst then waits
 * at the router with legs free. With {@code flow.max_queued} 2, most of a burst of 8 must end 429 {@code queue_full}.
 */
@Timeout(120)
class SaturatedQueueFullTest {
  private static final int QUEUE_MAX = 2;
  private static final int MAX_QUEUED = 2;
  private static final int BURST = 8;

  private static JsonObject completion() {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "a queue of one").put("max_tokens", 8)
        .put("ignore_eos", true);
  }

  /** A completion's status and body. */
  private static Future<String> post(RouterHarness h, HttpClientAgent client) {
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
        .putHeader("content-type", "application/json");
    return h.onContext(() -> client.request(options).compose(req -> req.send(completion().toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b)));
  }

  private static void await(java.util.function.BooleanSupplier condition) throws InterruptedException {
    while (!condition.getAsBoolean()) Thread.sleep(20);
  }

  @Test
  void aBurstHeldByTheEnginesIsBoundedByMaxQueued() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
            .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 0.1).put("metrics_timeout_s", 0.5))
            .put("flow", new JsonObject().put("engine_queue_max", QUEUE_MAX).put("max_queued", MAX_QUEUED)),
        (iid, options) -> {
          if (iid.equals("D0")) options.setMaxNumSeqs(1).setItlMs(60);
        })) {
      HttpClientAgent client = h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(64));
      List<Future<String>> replies = new ArrayList<>();
      for (int i = 0; i < 1 + QUEUE_MAX; i++) replies.add(post(h, client));
      LocalPlacement placement = LocalPlacement.of(h.vertx);
      await(() -> placement.room(RouterHarness.MODEL, QUEUE_MAX).saturated());
      List<Future<String>> burst = new ArrayList<>();
      for (int i = 0; i < BURST; i++) burst.add(post(h, client));
      List<String> answers = new ArrayList<>();
      for (Future<String> reply : burst) answers.add(RouterHarness.await(reply));
      for (Future<String> reply : replies) RouterHarness.await(reply);
      long full = answers.stream().filter(a -> a.startsWith("429") && a.contains("max_queued")).count();
      assertTrue(full >= 1, "flow.max_queued " + MAX_QUEUED + " bounds the " + BURST + " held at the router: some end 429 "
          + "queue_full; seen " + answers.stream().map(a -> a.substring(0, 3)).toList() + ", D0's peak queue "
          + h.engine("D0").stats().getLong("peak_waiting"));
    }
  }
}
