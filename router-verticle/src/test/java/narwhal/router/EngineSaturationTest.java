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
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The engines' own queues hold requests at the router ({@code flow.engine_queue_max},
 * docs/operations.md#sharing-a-fleet): a decode engine running one sequence at a time fills its queue
 * ({@code vllm:num_requests_waiting}) as vLLM's does; once placement's reading says the decode tier is saturated, new
 * requests wait at the router and start only in place of ones that ended, so the engine's queue stays at the bound
 * instead of taking the whole burst; every request is still served. Without the bound the same burst lands in the
 * engine's queue.
 */
@Timeout(120)
class EngineSaturationTest {
  private static final int QUEUE_MAX = 2;
  private static final int BURST = 6;

  private static RouterHarness start(int engineQueueMax) throws Exception {
    return RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
            .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 0.1).put("metrics_timeout_s", 0.5))
            .put("flow", new JsonObject().put("engine_queue_max", engineQueueMax)),
        (iid, options) -> {
          if (iid.equals("D0")) options.setMaxNumSeqs(1).setItlMs(60);
        });
  }

  private static JsonObject completion() {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "a queue of one").put("max_tokens", 8)
        .put("ignore_eos", true);
  }

  /** Polls {@code condition} every 20 ms on the harness's clock until it holds (the test's timeout bounds it). */
  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    while (!condition.getAsBoolean()) Thread.sleep(20);
  }

  /**
   * Starts a completion from a client of its own with room for the whole burst (the harness's client keeps Vert.x's
   * default of 5 connections, which alone would bound what reaches the engine).
   */
  private static Future<Integer> post(RouterHarness h, HttpClientAgent client) {
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
        .putHeader("content-type", "application/json");
    return h.onContext(() -> client.request(options).compose(req -> req.send(completion().toBuffer()))
        .compose(resp -> resp.body().map(b -> {
          if (resp.statusCode() != 200) throw new AssertionError(resp.statusCode() + " " + b);
          return resp.statusCode();
        })));
  }

  private static HttpClientAgent client(RouterHarness h) {
    return h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(4 * (1 + QUEUE_MAX + BURST)));
  }


  private static int held(RouterHarness h) {
    return h.get("/narwhal/state").json().getJsonObject("flow").getInteger("held_by_engines");
  }

  @Test
  void aBurstWaitsAtTheRouterWhileTheDecodeEnginesQueueIsFull() throws Exception {
    try (RouterHarness h = start(QUEUE_MAX)) {
      HttpClientAgent client = client(h);
      List<Future<Integer>> replies = new ArrayList<>();
      // one running on D0 and two waiting there: the decode tier is saturated
      for (int i = 0; i < 1 + QUEUE_MAX; i++) replies.add(post(h, client));
      LocalPlacement placement = LocalPlacement.of(h.vertx);
      await("placement reads D0 as saturated", () -> placement.room(RouterHarness.MODEL, QUEUE_MAX).saturated());
      for (int i = 0; i < BURST; i++) replies.add(post(h, client));
      await("the burst is held at the router", () -> held(h) > 0);
      for (Future<Integer> reply : replies) assertEquals(200, RouterHarness.await(reply));
      long peak = h.engine("D0").stats().getLong("peak_waiting");
      assertTrue(peak <= QUEUE_MAX + 1, "D0's queue stayed at the bound (one more while a replacement overtook an ending "
          + "leg), not the burst's " + (QUEUE_MAX + BURST) + ": peak " + peak);
      assertEquals(0, held(h));
      assertEquals(0, h.reservations(), "nothing left reserved");
    }
  }

  @Test
  void withoutTheBoundTheBurstLandsInTheEnginesQueue() throws Exception {
    try (RouterHarness h = start(0)) {
      HttpClientAgent client = client(h);
      List<Future<Integer>> replies = new ArrayList<>();
      for (int i = 0; i < 1 + QUEUE_MAX + BURST; i++) replies.add(post(h, client));
      await("the whole burst waits on D0", () -> h.engine("D0").stats().getLong("waiting") >= QUEUE_MAX + BURST - 1);
      assertEquals(0, held(h));
      for (Future<Integer> reply : replies) assertEquals(200, RouterHarness.await(reply));
    }
  }
}
