package narwhal.tools;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import narwhal.launcher.NarwhalNode;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica whose fleet names {@code engine.engine_api_key_env}, as {@code serve} runs it: the embedded simulated
 * engines start with that key (refusing keyless {@code /v1/*} requests, as vLLM's {@code --api-key}), the strict
 * preflight passes and the router serves through them.
 */
@Timeout(60)
class KeyedNodeTest {
  private static final String KEY_ENV = "NARWHAL_TEST_ENGINE_KEY";
  private static final String KEY = "sk-node-test";
  private static final String MODEL = SimEngineOptions.DEFAULT_MODEL;
  private static final UnaryOperator<String> ENV = name -> KEY_ENV.equals(name) ? KEY : null;
  private final Vertx client = Vertx.vertx();
  private final HttpClientAgent http = client.createHttpClient();
  private final io.vertx.core.Context context = client.getOrCreateContext();

  private record Reply(int status, String body) {
  }

  @Test
  void embeddedKeyedFleetPassesStrictPreflightAndServes() throws Exception {
    int producer = freePort();
    int consumer = freePort();
    Path journal = Files.createTempFile("narwhal-keyed-journal", ".jsonl");
    NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", MODEL)
        .put("engines", new JsonArray()
            .add(new JsonObject().put("iid", "P0").put("url", "http://127.0.0.1:" + producer).put("role", "prefill"))
            .add(new JsonObject().put("iid", "D0").put("url", "http://127.0.0.1:" + consumer).put("role", "decode")))
        .put("sim", new JsonObject().put("embedded", true))
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("engine", new JsonObject().put("engine_api_key_env", KEY_ENV))
        .put("journal", new JsonObject().put("path", journal.toString())));
    List<String> said = new CopyOnWriteArrayList<>();
    NarwhalNode node = await(NarwhalNode.start(config, NarwhalNode.PreflightMode.STRICT, said::add, ENV));
    try {
      assertTrue(said.contains("preflight passed"), String.valueOf(said));
      assertTrue(said.stream().anyMatch(l -> l.startsWith("P0→D0") && l.contains(" ok ")), String.valueOf(said));
      Reply served = await(send("http://127.0.0.1:" + node.port() + "/v1/completions", null,
          new JsonObject().put("model", MODEL).put("prompt", "The narwhal is").put("max_tokens", 4)));
      assertEquals(200, served.status(), served.body());

      String models = "http://127.0.0.1:" + producer + "/v1/models";
      assertEquals(401, await(send(models, null, null)).status(), "the embedded engine wants the key");
      assertEquals(200, await(send(models, KEY, null)).status());
    } finally {
      await(node.shutdown(line -> { }));
      Files.deleteIfExists(journal);
    }
  }

  private Future<Reply> send(String url, String key, JsonObject body) {
    RequestOptions options = new RequestOptions().setMethod(body == null ? HttpMethod.GET : HttpMethod.POST).setAbsoluteURI(url)
        .putHeader("content-type", "application/json");
    if (key != null) options.putHeader("authorization", "Bearer " + key);
    return Future.future(p -> context.runOnContext(v -> http.request(options)
        .compose(req -> body == null ? req.send() : req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> new Reply(resp.statusCode(), b.toString())))
        .onComplete(p)));
  }

  private static int freePort() throws Exception {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private static <T> T await(Future<T> future) {
    try {
      return future.await(60, java.util.concurrent.TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError(e);
    }
  }

  @AfterEach
  void close() {
    await(http.close().eventually(client::close));
  }
}
