package narwhal.router;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.errors.UnauthorizedException;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code server.api_key_env} and {@code server.ops_token_env} over real HTTP: {@code /v1/*} needs one of the client
 * keys (401 {@code invalid_api_key} otherwise, journaled as rejected), {@code /metrics} and {@code /narwhal/state}
 * the ops token, {@code /health} and {@code /ready} stay open; the client's key never reaches an engine, which gets
 * the engines' own key. The official OpenAI Java client works with a right key and is refused with a wrong one.
 */
@Timeout(60)
class ApiKeyTest {
  static final String KEY_A = "sk-client-a";
  static final String KEY_B = "sk-client-b";
  static final String OPS = "ops-secret";
  static final String ENGINE_KEY = "engine-secret";
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        fleet -> fleet.put("server", fleet.getJsonObject("server").put("api_key_env", "TEST_CLIENT_KEYS")
                .put("ops_token_env", "TEST_OPS_TOKEN"))
            .put("engine", fleet.getJsonObject("engine").put("engine_api_key_env", "TEST_ENGINE_KEY")),
        (iid, options) -> { },
        Map.of("TEST_CLIENT_KEYS", " " + KEY_A + " ," + KEY_B + ",", "TEST_OPS_TOKEN", OPS, "TEST_ENGINE_KEY", ENGINE_KEY));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }

  private static JsonObject completion() {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "tusks and keys").put("max_tokens", 4);
  }

  private static RouterHarness.Reply post(Map<String, String> headers) {
    return h.post("/v1/completions", completion().toBuffer(), headers);
  }

  @Test
  void eachConfiguredKeyIsServedAndTheEngineGetsItsOwnKeyNeverTheClients() {
    for (String key : List.of(KEY_A, KEY_B)) {
      RouterHarness.Reply reply = post(Map.of("authorization", "Bearer " + key));
      assertEquals(200, reply.status(), reply.body());
    }
    List<JsonObject> seen = new java.util.ArrayList<>(h.engine("P0").requests());
    seen.addAll(h.engine("D0").requests());
    assertEquals(4, seen.size(), "two legs per request");
    for (JsonObject leg : seen) assertEquals("Bearer " + ENGINE_KEY, leg.getString("authorization"), leg.encode());
  }

  @Test
  void missingOrWrongKeyIs401InTheOpenAiShapeAndJournaledAsRejected() throws Exception {
    for (Map<String, String> headers : List.of(Map.<String, String>of(), Map.of("authorization", "Bearer sk-wrong"),
        Map.of("authorization", KEY_A), Map.of("authorization", "Bearer " + KEY_A + "x"),
        Map.of("authorization", "Bearer " + ENGINE_KEY), Map.of("authorization", "Basic " + KEY_A))) {
      RouterHarness.Reply reply = post(headers);
      assertEquals(401, reply.status(), headers + " → " + reply.body());
      JsonObject error = reply.error();
      assertEquals("invalid_api_key", error.getString("type"));
      assertEquals("invalid_api_key", error.getString("code"));
      assertTrue(error.containsKey("param") && error.getValue("param") == null);
      assertFalse(reply.body().contains("sk-") || reply.body().contains(ENGINE_KEY), "never echoes a key: " + reply.body());
      JsonObject row = h.journalRow(reply.requestId());
      assertEquals("rejected", row.getString("terminal"));
      assertEquals("invalid_api_key", row.getString("reason"));
      assertEquals(401, row.getInteger("status"));
    }
    assertTrue(h.engine("P0").requests().isEmpty() && h.engine("D0").requests().isEmpty(), "nothing reached an engine");
    assertEquals(401, h.get("/v1/models").status());
    assertEquals(200, h.get("/v1/models", Map.of("authorization", "Bearer " + KEY_B)).status());
    assertEquals(401, h.post("/v1/chat/completions", Buffer.buffer("{}"), Map.of()).status(), "refused before the body is read");
    // vLLM's key check lets OPTIONS through: not a preflight (no Origin), it is the path's 405
    RouterHarness.Reply options = h.request(io.vertx.core.http.HttpMethod.OPTIONS, "/v1/completions", null, Map.of());
    assertEquals(405, options.status(), options.body());
    assertEquals("POST", options.header("allow"));
  }

  @Test
  void healthAndReadyStayOpenMetricsAndStateNeedTheOpsToken() {
    assertEquals(200, h.get("/health").status());
    assertEquals(200, h.get("/ready").status());
    for (String path : List.of("/metrics", "/narwhal/state")) {
      RouterHarness.Reply refused = h.get(path);
      assertEquals(401, refused.status(), path);
      assertEquals("invalid_api_key", refused.error().getString("type"));
      assertEquals(401, h.get(path, Map.of("authorization", "Bearer " + KEY_A)).status(), "a client key is not the ops token");
      assertEquals(200, h.get(path, Map.of("authorization", "Bearer " + OPS)).status(), path);
    }
    assertTrue(h.get("/metrics", Map.of("authorization", "Bearer " + OPS)).body()
        .contains("narwhal_rejected_total{model=\"\",reason=\"invalid_api_key\"}"));
  }

  @Test
  void theOfficialOpenAiClientWorksWithAKeyAndIsRefusedWithAWrongOne() {
    CompletionCreateParams params = CompletionCreateParams.builder().model(RouterHarness.MODEL).prompt("tusks and keys")
        .maxTokens(4).build();
    OpenAIClient right = OpenAIOkHttpClient.builder().baseUrl(h.routerUrl() + "/v1").apiKey(KEY_B).maxRetries(0).build();
    OpenAIClient wrong = OpenAIOkHttpClient.builder().baseUrl(h.routerUrl() + "/v1").apiKey("sk-not-ours").maxRetries(0).build();
    try {
      Completion completion = right.completions().create(params);
      assertFalse(completion.choices().get(0).text().isEmpty());
      UnauthorizedException refused = assertThrows(UnauthorizedException.class, () -> wrong.completions().create(params));
      assertEquals(401, refused.statusCode());
      assertEquals("invalid_api_key", refused.code().orElse(null));
    } finally {
      right.close();
      wrong.close();
    }
  }

  @Test
  void withoutClientKeysTheClientsAuthorizationHeaderIsNotForwarded() throws Exception {
    try (RouterHarness open = RouterHarness.start(List.of("B0:both"))) {
      assertEquals(200, open.post("/v1/completions", completion().toBuffer(), Map.of("authorization", "Bearer sk-client")).status());
      List<JsonObject> legs = open.engine("B0").requests();
      assertEquals(2, legs.size());
      for (JsonObject leg : legs) assertNull(leg.getString("authorization"), "no engine key configured, no header: " + leg);
    }
  }
}
