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
 * {@code flow.prefill_legs_max} at 1 when the producer attempts wait for leaves service (an operator drains it): the
 * held attempts go to the other producer ({@code stillTaking}), and the bound holds there too: it never runs two of
 * this replica's prefills at once.
 */
@Timeout(120)
class PrefillLegsDrainTest {

  private static List<Future<String>> send(RouterHarness h, String prompt, int n) {
    HttpClientAgent client = h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(2 * n));
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", prompt)
        .put("max_tokens", 2).put("ignore_eos", true);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
        .putHeader("content-type", "application/json");
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

  @Test
  void attemptsHeldForADrainedProducerKeepTheBoundOnTheOne() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json
            .put("flow", new JsonObject().put("prefill_legs_max", 1)),
        (iid, options) -> {
          if (iid.startsWith("P")) options.setTtftBaseMs(800);
        })) {
      String drained = "P0";
      String other = "P1";
      h.admin("drain", new JsonObject().put("iid", other).put("force", true));
      List<Future<String>> replies = new ArrayList<>(send(h, "the same prefix every time", 3));
      while (flow(h).getInteger("held_by_producers") < 2) Thread.sleep(10);
      h.admin("undrain", new JsonObject().put("iid", other));
      while (!"serving".equals(AdminAndPlacementTest.engineState(h, other))) Thread.sleep(10);
      h.admin("drain", new JsonObject().put("iid", drained).put("force", true));
      while (!"draining".equals(AdminAndPlacementTest.engineState(h, drained))) Thread.sleep(10);
      h.engine(drained).clearRequests();
      replies.addAll(send(h, "another prompt for the other producer", 3));
      for (Future<String> reply : replies) assertTrue(RouterHarness.await(reply).startsWith("200 "));
      assertTrue(h.engine(drained).requests().isEmpty(), "the drained producer took no new prefill: " + h.engine(drained).requests());
      assertEquals(1L, h.engine(other).stats().getLong("peak_requests_in_progress"),
          other + " ran one of this replica's prefills at a time: " + h.engine(other).stats().encode());
      assertEquals(0, flow(h).getInteger("held_by_producers"));
      assertEquals(new JsonObject(), flow(h).getJsonObject("prefills_running"));
    }
  }
}
