package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A router started (default preflight, {@code warn}) while its decode engine is still down (issue 41, item 4): it does
 * not exit; the engine is unchecked, so {@code /ready} is false and a request is refused before any prefill (no KV held
 * on the producer); once the engine comes up, its readmission checks pass and it serves.
 */
@Timeout(60)
class UncheckedStartTest {
  private final Vertx client = Vertx.vertx();
  private final HttpClientAgent http = client.createHttpClient();
  private final List<SimEngine> sims = new ArrayList<>();
  private NarwhalNode node;

  @AfterEach
  void close() {
    if (node != null) ClusterHarness.await(node.close());
    sims.forEach(s -> ClusterHarness.await(s.close()));
    ClusterHarness.await(client.close());
  }

  private int status(HttpMethod method, String uri, JsonObject body) {
    RequestOptions options = new RequestOptions().setMethod(method).setHost("127.0.0.1").setPort(node.port()).setURI(uri)
        .putHeader("content-type", "application/json");
    return ClusterHarness.await(Future.<Integer>future(p -> client.getOrCreateContext().runOnContext(v -> http.request(options)
        .compose(req -> body == null ? req.send() : req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode()))
        .onComplete(p))));
  }

  private int complete() {
    return status(HttpMethod.POST, "/v1/completions",
        new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", 4));
  }

  @Test
  void anEngineDownAtStartIsUncheckedThenServesOnceUp() {
    for (String spec : List.of("P0:prefill", "D0:decode")) {
      String[] p = spec.split(":");
      sims.add(ClusterHarness.await(SimEngine.start(client, new SimEngineOptions().setName(p[0]).setRole(p[1]).setPort(0)
          .setSideChannelPort(0))));
    }
    SimEngine producer = sims.get(0);
    SimEngine decode = sims.get(1);
    ClusterHarness.await(decode.stopListening());
    JsonArray engines = new JsonArray();
    sims.forEach(s -> engines.add(new JsonObject().put("iid", s.name()).put("url", s.url()).put("role", s.options().getRole())));
    NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", ClusterHarness.MODEL).put("engines", engines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("recovery", new JsonObject().put("monitor_interval_s", 0.1).put("readmit_every", 2).put("liveness_every", 100_000)));

    node = ClusterHarness.await(NarwhalNode.start(config, NarwhalNode.PreflightMode.WARN, line -> { }, ClusterHarness.ENV));
    assertEquals(503, status(HttpMethod.GET, "/ready", null), "no checked decode engine: not ready");
    producer.clearRequests();
    assertEquals(503, complete(), "no checked engine can decode: refused");
    assertEquals(List.of(), producer.requests(), "refused before any prefill: no handoff held on the producer");

    Promise<Void> serving = Promise.promise();
    node.vertx().eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      if (event != null && "D0".equals(event.iid()) && event.state() == EngineState.SERVING) serving.tryComplete();
    }).completion().onSuccess(v -> decode.resumeListening());
    ClusterHarness.await(serving.future());
    // placement hears the same change on its own consumer: ready once it has
    for (int i = 0; i < 200 && status(HttpMethod.GET, "/ready", null) != 200; i++) {
      ClusterHarness.await(io.vertx.core.Future.<Void>future(p -> client.setTimer(10, t -> p.complete())));
    }
    assertEquals(200, complete(), "D0 up and checked: served");
  }
}
