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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Decode legs waiting for their KV transfer are no queue ({@code flow.engine_queue_max},
 * docs/operations.md#sharing-a-fleet): vLLM counts them in {@code vllm:num_requests_waiting} and, by reason,
 * {@code deferred}; the simulated D0 does the same. With three of them pulling their KV on D0 for readings on end, the
 * decode tier is not saturated at a bound of 1 and new requests are not held at the router.
 */
@Timeout(120)
class DeferredWaitingTest {
  private static final int QUEUE_MAX = 1;

  private static JsonObject d0Load(RouterHarness h) {
    for (Object o : h.get("/narwhal/state").json().getJsonArray("engines")) {
      JsonObject engine = (JsonObject) o;
      if ("D0".equals(engine.getString("iid"))) return engine.getJsonObject("load", new JsonObject());
    }
    return new JsonObject();
  }

  @Test
  void decodeLegsPullingTheirKvDoNotSaturateTheDecodeTier() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
            .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 0.1).put("metrics_timeout_s", 0.5))
            .put("flow", new JsonObject().put("engine_queue_max", QUEUE_MAX)),
        (iid, options) -> {
          if (iid.equals("D0")) options.setKvTransferPerBlockMs(500);
        })) {
      HttpClientAgent client = h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(16));
      JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "a prompt of a few blocks ".repeat(12)).put("max_tokens", 2);
      RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
          .putHeader("content-type", "application/json");
      List<Future<Integer>> replies = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        replies.add(h.onContext(() -> client.request(options).compose(req -> req.send(body.toBuffer()))
            .compose(resp -> resp.body().map(b -> resp.statusCode()))));
      }
      while (h.engine("D0").stats().getInteger("deferred") < 3) Thread.sleep(10);
      long since = System.currentTimeMillis();
      // two readings of D0 taken while the three pull their KV
      JsonObject load = d0Load(h);
      while (load.getLong("read_at_ms", 0L) < since + 250) {
        Thread.sleep(20);
        load = d0Load(h);
      }
      assertEquals(3, h.engine("D0").stats().getInteger("deferred"), "the three still pull their KV: " + load.encode());
      assertTrue(load.getDouble("waiting") >= 3, "D0 reports them as waiting, as vLLM does: " + load.encode());
      assertEquals(0.0, load.getDouble("queued"), "none of them waits for a place in D0's batch: " + load.encode());
      LocalPlacement placement = LocalPlacement.of(h.vertx);
      assertFalse(placement.room(RouterHarness.MODEL, QUEUE_MAX).saturated(), "the decode tier has room");
      long prefills = h.engine("P0").stats().getInteger("requests");
      for (int i = 0; i < 2; i++) {
        replies.add(h.onContext(() -> client.request(options).compose(req -> req.send(body.toBuffer()))
            .compose(resp -> resp.body().map(b -> resp.statusCode()))));
      }
      // not held at the router: their prefills reach P0 while the first three still pull their KV
      while (h.engine("P0").stats().getInteger("requests") < prefills + 2) Thread.sleep(10);
      assertTrue(h.engine("D0").stats().getInteger("deferred") >= 3, "the first three still pull their KV");
      assertEquals(0, h.get("/narwhal/state").json().getJsonObject("flow").getInteger("held_by_engines"));
      for (Future<Integer> reply : replies) assertEquals(200, RouterHarness.await(reply));
    }
  }
}
