package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Attack on issue 44: attempts held at the router by a saturated decode tier ({@code flow.engine_queue_max}) keep the
 * prefill engine they reserved while they wait (docs/operations.md#sharing-a-fleet). A hot reload that removes that
 * engine from the fleet must not see client prefills sent to it afterwards: "A removed engine takes no new leg from
 * the reload on; its running legs finish" (docs/operations.md, hot reload of the fleet).
 */
@Timeout(60)
class HeldOnRemovedEngineTest {
  private static final int QUEUE_MAX = 2;
  private static final int BURST = 6;

  private static Future<String> post(RouterHarness h, HttpClientAgent client) {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "held while P0 leaves")
        .put("max_tokens", 8).put("ignore_eos", true);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/completions")
        .putHeader("content-type", "application/json");
    return h.onContext(() -> client.request(options).compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b)));
  }

  private static void await(java.util.function.BooleanSupplier condition) throws InterruptedException {
    while (!condition.getAsBoolean()) Thread.sleep(20);
  }

  private static long clientPrefills(RouterHarness h, String iid) {
    return h.engine(iid).requests().stream().filter(r -> r.getString("request_id", "").endsWith("-prefill")
        && !r.getString("request_id").startsWith("probe-")).count();
  }

  @Test
  void aPrefillEngineRemovedByReloadGetsNoPrefillFromAttemptsHeldBeforeTheReload() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json
            .put("placement", new JsonObject().put("policy", "load").put("metrics_interval_s", 0.1)
                .put("metrics_timeout_s", 0.5))
            .put("flow", new JsonObject().put("engine_queue_max", QUEUE_MAX)),
        (iid, options) -> {
          if (iid.equals("D0")) options.setMaxNumSeqs(1).setItlMs(150);
        })) {
      HttpClientAgent client = h.vertx.createHttpClient(new HttpClientOptions(), new PoolOptions().setHttp1MaxSize(64));
      List<Future<String>> replies = new ArrayList<>();
      for (int i = 0; i < 1 + QUEUE_MAX; i++) replies.add(post(h, client));
      LocalPlacement placement = LocalPlacement.of(h.vertx);
      await(() -> placement.room(RouterHarness.MODEL, QUEUE_MAX).saturated());
      for (int i = 0; i < BURST; i++) replies.add(post(h, client));
      await(() -> h.get("/narwhal/state").json().getJsonObject("flow").getInteger("held_by_engines") >= 2);

      JsonObject fleet = h.config.toJson();
      JsonArray engines = new JsonArray();
      for (Object o : fleet.getJsonArray("engines")) if (!"P0".equals(((JsonObject) o).getString("iid"))) engines.add(o);
      long before = clientPrefills(h, "P0");
      h.config = NarwhalConfig.fromJson(fleet.put("engines", engines));
      h.vertx.eventBus().publish(Addresses.CONFIG_CHANGED, h.config.toJson());

      List<String> answers = new ArrayList<>();
      for (Future<String> reply : replies) answers.add(RouterHarness.await(reply).substring(0, 3));
      assertEquals(before, clientPrefills(h, "P0"), "P0 left the fleet by reload with attempts held at the router: none of "
          + "them is sent to it afterwards (answers " + answers + ")");
    }
  }
}
