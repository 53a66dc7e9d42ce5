package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * A producer restarted in place (issue 41, item 5): same URL, a new NIXL side channel. Its first handoff names an
 * endpoint the router did not learn; the router re-reads its facts and tries the request again, so the client gets
 * its answer, not 502 {@code endpoint mismatch}, and the breaker counts no fault.
 */
@Timeout(60)
class RestartInPlaceTest {
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

  private String complete() {
    JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", 4);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json");
    return ClusterHarness.await(Future.<String>future(p -> client.getOrCreateContext().runOnContext(v -> http.request(options)
        .compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b))
        .onComplete(p))));
  }

  private static SimEngineOptions options(String name, String role, int port) {
    return new SimEngineOptions().setName(name).setRole(role).setPort(port).setSideChannelPort(0);
  }

  @Test
  void aProducerRestartedWithANewSideChannelIsRelearnedNotFailed() {
    sims.add(ClusterHarness.await(SimEngine.start(client, options("P0", "prefill", 0))));
    sims.add(ClusterHarness.await(SimEngine.start(client, options("D0", "decode", 0))));
    JsonArray engines = new JsonArray();
    sims.forEach(s -> engines.add(new JsonObject().put("iid", s.name()).put("url", s.url()).put("role", s.options().getRole())));
    NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", ClusterHarness.MODEL).put("engines", engines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("recovery", new JsonObject().put("liveness_every", 100_000)));
    node = ClusterHarness.await(NarwhalNode.start(config, NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV));
    assertEquals("200", complete().substring(0, 3));

    SimEngine old = sims.get(0);
    int port = old.port();
    int sideChannel = old.sideChannelPort();
    ClusterHarness.await(old.close());
    SimEngine restarted = ClusterHarness.await(SimEngine.start(client, options("P0", "prefill", port)));
    sims.set(0, restarted);
    assertNotEquals(sideChannel, restarted.sideChannelPort(), "restarted with another side channel");

    String answer = complete();
    assertEquals("200", answer.substring(0, 3), answer);
    assertEquals(2, restarted.requests().size(), "the first handoff, then the one made after re-reading P0's facts");
  }
}
