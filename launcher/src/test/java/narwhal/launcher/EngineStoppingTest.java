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
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A decode engine stopping gracefully under load, as vLLM on SIGTERM (issue 41, item 6): its port refuses new
 * connections, a request on an open connection gets 503 "server is shutting down", its running streams finish. No
 * client sees an error: new legs go to the other decode engine, the streams it was running complete.
 */
@Timeout(60)
class EngineStoppingTest {
  private static final int CLIENTS = 4;
  private static final int REQUESTS_EACH = 12;

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

  private Future<Integer> stream() {
    JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal is").put("max_tokens", 8)
        .put("stream", true);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(node.port())
        .setURI("/v1/completions").putHeader("content-type", "application/json");
    return http.request(options).compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode() == 200 && b.toString().contains("[DONE]")
            && !b.toString().contains("\"error\"") ? 200 : resp.statusCode() == 200 ? 599 : resp.statusCode()));
  }

  /** One client's requests one after the other; the statuses, a stream that ended in an error counted as 599. */
  private Future<List<Integer>> client(int requests, Runnable afterFirst) {
    List<Integer> statuses = new ArrayList<>();
    Future<Void> chain = Future.succeededFuture();
    for (int i = 0; i < requests; i++) {
      int n = i;
      chain = chain.compose(v -> stream()).map(status -> {
        statuses.add(status);
        if (n == 1) afterFirst.run();
        return null;
      });
    }
    return chain.map(v -> statuses);
  }

  @Test
  void aDecodeEngineStoppingGracefullyFailsNoRequest() {
    for (String spec : List.of("P0:prefill", "D0:decode", "D1:decode")) {
      String[] p = spec.split(":");
      sims.add(ClusterHarness.await(SimEngine.start(client, new SimEngineOptions().setName(p[0]).setRole(p[1]).setPort(0)
          .setSideChannelPort(0).setItlMs(20))));
    }
    SimEngine stopping = sims.get(2);
    JsonArray engines = new JsonArray();
    sims.forEach(s -> engines.add(new JsonObject().put("iid", s.name()).put("url", s.url()).put("role", s.options().getRole())));
    NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", ClusterHarness.MODEL).put("engines", engines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("recovery", new JsonObject().put("liveness_every", 100_000)));
    node = ClusterHarness.await(NarwhalNode.start(config, NarwhalNode.PreflightMode.STRICT, line -> { }, ClusterHarness.ENV));
    sims.forEach(SimEngine::clearRequests);

    boolean[] stopped = {false};
    Runnable stopOnce = () -> {
      if (stopped[0]) return;
      stopped[0] = true;
      stopping.shutDown(30_000);
    };
    List<Integer> statuses = ClusterHarness.await(Future.<List<Integer>>future(done -> client.getOrCreateContext().runOnContext(v -> {
      List<Future<List<Integer>>> clients = IntStream.range(0, CLIENTS).mapToObj(i -> client(REQUESTS_EACH, stopOnce)).toList();
      Future.all(clients).map(all -> clients.stream().flatMap(c -> c.result().stream()).toList()).onComplete(done);
    })));
    assertTrue(stopped[0]);
    assertTrue(stopping.requests().size() > 0, "D1 served before it stopped");
    assertEquals(List.of(), statuses.stream().filter(s -> s != 200).toList(), "no client saw an error: " + statuses);
  }
}
