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
 * {@code flow.prefill_legs_max} against a real producer (docs/operations.md#sharing-a-fleet): the simulated P0 takes
 * every short prompt into its step at once, as vLLM does (none waits: {@code flow.engine_queue_max} sees nothing), so
 * only the router's bound keeps a burst off it; with the bound at 1 P0 never runs two client prefills at once, every
 * request is still served, and nothing stays reserved or counted. Without it the burst runs on P0 together.
 */
@Timeout(120)
class PrefillLegsMaxTest {
  private static final int BURST = 5;

  private static RouterHarness start(int prefillLegsMax) throws Exception {
    return RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
            .put("flow", new JsonObject().put("prefill_legs_max", prefillLegsMax)),
        (iid, options) -> {
          if (iid.equals("P0")) options.setTtftBaseMs(150);
        });
  }

  private static List<Future<String>> burst(RouterHarness h) {
    HttpClientAgent client = h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(2 * BURST));
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "one prefill at a time")
        .put("max_tokens", 4).put("ignore_eos", true);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
        .putHeader("content-type", "application/json");
    List<Future<String>> replies = new ArrayList<>();
    for (int i = 0; i < BURST; i++) {
      replies.add(h.onContext(() -> client.request(options).compose(req -> req.send(body.toBuffer()))
          .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b))));
    }
    return replies;
  }

  private static JsonObject flow(RouterHarness h) {
    return h.get("/narwhal/state").json().getJsonObject("flow");
  }

  @Test
  void aBurstReachesTheProducerOnePrefillAtATime() throws Exception {
    try (RouterHarness h = start(1)) {
      long before = h.engine("P0").stats().getLong("peak_requests_in_progress");
      List<Future<String>> replies = burst(h);
      while (flow(h).getInteger("held_by_producers") == 0) Thread.sleep(10);
      for (Future<String> reply : replies) assertTrue(RouterHarness.await(reply).startsWith("200 "));
      long peak = h.engine("P0").stats().getLong("peak_requests_in_progress");
      assertEquals(Math.max(1, before), peak, "P0 ran one client prefill at a time (its peak before the burst: " + before + ")");
      assertEquals(0, flow(h).getInteger("held_by_producers"));
      assertEquals(new JsonObject(), flow(h).getJsonObject("prefills_running"), "no prefill left counted");
      assertEquals(0, h.reservations(), "nothing left reserved");
      List<JsonObject> rows = h.journalRows(BURST);
      long waited = rows.stream().filter(r -> r.getDouble("queued_s") > 0).count();
      assertTrue(waited >= BURST - 1, "every request but the first waited its turn at the router: " + rows);
      for (JsonObject r : rows) {
        assertTrue(r.getDouble("queued_s") < r.getDouble("ttft_s"), "the wait is part of the time to the prefill's end: " + r.encode());
      }
    }
  }

  @Test
  void withoutTheBoundTheBurstRunsOnTheProducerTogether() throws Exception {
    try (RouterHarness h = start(0)) {
      List<Future<String>> replies = burst(h);
      for (Future<String> reply : replies) assertTrue(RouterHarness.await(reply).startsWith("200 "));
      assertTrue(h.engine("P0").stats().getLong("peak_requests_in_progress") >= 2,
          "P0 took more than one prefill at once: " + h.engine("P0").stats().encode());
      for (JsonObject r : h.journalRows(BURST)) assertEquals(0.0, r.getDouble("queued_s"), "nothing waited at the router: " + r.encode());
    }
  }
}
