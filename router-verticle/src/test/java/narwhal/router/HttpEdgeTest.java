package narwhal.router;

import io.vertx.core.http.HttpMethod;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Issue 26: what vLLM answers at the HTTP edge — 405 with {@code Allow}, CORS, ids and headers — the router answers too. */
@Timeout(60)
class HttpEdgeTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @Test
  void aKnownPathWithAnotherMethodIs405WithAllow() {
    for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.PUT, HttpMethod.DELETE, HttpMethod.OPTIONS)) {
      RouterHarness.Reply reply = h.request(method, "/v1/completions", null, Map.of());
      assertEquals(405, reply.status(), method + " " + reply.body());
      assertEquals("POST", reply.header("allow"));
      assertEquals("Method Not Allowed: " + method.name() + " /v1/completions (allowed: POST)", reply.error().getString("message"));
    }
    RouterHarness.Reply models = h.request(HttpMethod.POST, "/v1/models", null, Map.of());
    assertEquals(405, models.status());
    assertEquals("GET", models.header("allow"));
    for (String[] known : new String[][] {{"POST", "/v1/responses/resp_abc", "GET"}, {"DELETE", "/v1/responses/resp_abc", "GET"},
        {"GET", "/v1/responses/resp_abc/cancel", "POST"}, {"GET", "/v1/completions/", "POST"}, {"POST", "/health/", "GET"}}) {
      RouterHarness.Reply reply = h.request(HttpMethod.valueOf(known[0]), known[1], null, Map.of());
      assertEquals(405, reply.status(), known[0] + " " + known[1] + ": " + reply.body());
      assertEquals(known[2], reply.header("allow"), known[0] + " " + known[1]);
    }
    assertEquals(404, h.request(HttpMethod.GET, "/v1/responses/a/b", null, Map.of()).status());
    RouterHarness.Reply unknown = h.request(HttpMethod.GET, "/v2/nothing", null, Map.of());
    assertEquals(404, unknown.status());
    assertNull(unknown.header("allow"));
  }

  @Test
  void aBrowserPreflightIsAnsweredAndResponsesAllowAnyOriginByDefault() {
    RouterHarness.Reply preflight = h.request(HttpMethod.OPTIONS, "/v1/chat/completions", null, Map.of("origin", "http://app.example",
        "access-control-request-method", "POST", "access-control-request-headers", "authorization,content-type"));
    assertEquals(204, preflight.status(), preflight.body());
    assertEquals("*", preflight.header("access-control-allow-origin"));
    assertTrue(preflight.header("access-control-allow-methods").contains("POST"), preflight.headers().toString());
    assertEquals("authorization,content-type", preflight.header("access-control-allow-headers"));
    assertNull(preflight.header("access-control-allow-credentials"));
    RouterHarness.Reply answer = h.post("/v1/completions", new io.vertx.core.json.JsonObject().put("prompt", "hi").put("max_tokens", 2)
        .toBuffer(), Map.of("origin", "http://app.example"));
    assertEquals(200, answer.status(), answer.body());
    assertEquals("*", answer.header("access-control-allow-origin"));
  }

  /**
   * vLLM's default policy ({@code allow_origins=["*"]}) takes any origin a browser sends: a desktop or mobile webview's
   * ({@code tauri://}, {@code capacitor://}, an Electron {@code app://}), a host with an underscore (a compose service
   * name), a sandboxed page's {@code null}; Vert.x's own {@code "*"} refused those with 403.
   */
  @Test
  void theDefaultPolicyTakesEveryOriginAsVllmDoes() {
    for (String origin : List.of("tauri://localhost", "capacitor://localhost", "vscode-webview://1abc", "app://.",
        "http://web_ui:3000", "chrome-extension://abcdefghijklmnopabcdefghijklmnop", "null")) {
      RouterHarness.Reply preflight = h.request(HttpMethod.OPTIONS, "/v1/chat/completions", null, Map.of("origin", origin,
          "access-control-request-method", "POST", "access-control-request-headers", "content-type"));
      assertEquals(204, preflight.status(), origin + ": " + preflight.body());
      assertEquals("*", preflight.header("access-control-allow-origin"), origin);
      RouterHarness.Reply models = h.get("/v1/models", Map.of("origin", origin));
      assertEquals(200, models.status(), origin + ": " + models.body());
      assertEquals("*", models.header("access-control-allow-origin"), origin);
      assertTrue(models.header("vary") == null || !models.header("vary").toLowerCase(java.util.Locale.ROOT).contains("origin"),
          "an answer for every origin does not vary by origin: " + models.headers());
    }
    assertNull(h.get("/v1/models", Map.of()).header("access-control-allow-origin"), "no CORS headers without an Origin");
  }

  /**
   * A listed origin of a scheme Vert.x's parser does not know (a Tauri app's) is served; others still get 403. It used
   * to stop the router's start (Vert.x's {@code Unsupported protocol}) though the fleet file's check took it.
   */
  @Test
  void aListedExtensionOriginIsServed() throws Exception {
    String extension = "tauri://localhost";
    try (RouterHarness listed = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json.put("server",
        json.getJsonObject("server").put("cors", new io.vertx.core.json.JsonObject().put("allowed_origins",
            new io.vertx.core.json.JsonArray().add(extension).add("https://app.example.com")))))) {
      for (String origin : List.of(extension, "https://app.example.com")) {
        RouterHarness.Reply preflight = listed.request(HttpMethod.OPTIONS, "/v1/completions", null, Map.of("origin", origin,
            "access-control-request-method", "POST"));
        assertEquals(204, preflight.status(), origin + ": " + preflight.body());
        assertEquals(origin, preflight.header("access-control-allow-origin"));
        RouterHarness.Reply models = listed.get("/v1/models", Map.of("origin", origin));
        assertEquals(200, models.status(), models.body());
        assertEquals(origin, models.header("access-control-allow-origin"));
      }
      RouterHarness.Reply other = listed.request(HttpMethod.OPTIONS, "/v1/completions", null, Map.of("origin",
          "tauri://elsewhere", "access-control-request-method", "POST"));
      assertEquals(403, other.status(), other.body());
    }
  }

  @Test
  void namedOriginsCredentialsAndKeysWorkTogether() throws Exception {
    try (RouterHarness keyed = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json.put("server",
        json.getJsonObject("server").put("api_key_env", "CORS_TEST_KEYS").put("cors", new io.vertx.core.json.JsonObject()
            .put("allowed_origins", new io.vertx.core.json.JsonArray().add("https://app.example.com")).put("allow_credentials", true)
            .put("allowed_headers", new io.vertx.core.json.JsonArray().add("authorization").add("content-type")))),
        (iid, o) -> { }, Map.of("CORS_TEST_KEYS", "sk-browser"))) {
      RouterHarness.Reply preflight = keyed.request(HttpMethod.OPTIONS, "/v1/completions", null, Map.of("origin", "https://app.example.com",
          "access-control-request-method", "POST", "access-control-request-headers", "authorization"));
      assertEquals(204, preflight.status(), "a preflight needs no key: " + preflight.body());
      assertEquals("https://app.example.com", preflight.header("access-control-allow-origin"));
      assertEquals("true", preflight.header("access-control-allow-credentials"));
      RouterHarness.Reply call = keyed.post("/v1/completions", new io.vertx.core.json.JsonObject().put("prompt", "hi").put("max_tokens", 2)
          .toBuffer(), Map.of("origin", "https://app.example.com", "authorization", "Bearer sk-browser"));
      assertEquals(200, call.status(), call.body());
      assertEquals("https://app.example.com", call.header("access-control-allow-origin"));
      RouterHarness.Reply stranger = keyed.request(HttpMethod.OPTIONS, "/v1/completions", null, Map.of("origin", "https://evil.example",
          "access-control-request-method", "POST"));
      assertEquals(403, stranger.status());
      assertEquals("CORS Rejected - Invalid origin", stranger.error().getString("message"));
    }
  }

  @Test
  void operatorRoutesGetNoCors() {
    for (String path : List.of("/metrics", "/narwhal/state")) {
      RouterHarness.Reply ops = h.get(path, Map.of("origin", "http://app.example"));
      assertEquals(200, ops.status(), path + ": " + ops.body());
      assertNull(ops.header("access-control-allow-origin"), path + " is no browser app's: " + ops.headers());
    }
    assertEquals("*", h.get("/v1/models", Map.of("origin", "http://app.example")).header("access-control-allow-origin"));
  }

  @Test
  void aReflectedOriginVariesByOrigin() throws Exception {
    try (RouterHarness credentialed = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json.put("server",
        json.getJsonObject("server").put("cors", new io.vertx.core.json.JsonObject().put("allow_credentials", true))))) {
      RouterHarness.Reply models = credentialed.get("/v1/models", Map.of("origin", "https://one.example"));
      assertEquals(200, models.status(), models.body());
      assertEquals("https://one.example", models.header("access-control-allow-origin"), models.headers().toString());
      assertTrue(String.valueOf(models.header("vary")).toLowerCase(java.util.Locale.ROOT).contains("origin"),
          "a shared cache must not give one origin's answer to another: " + models.headers());
      RouterHarness.Reply preflight = credentialed.request(HttpMethod.OPTIONS, "/v1/completions", null, Map.of("origin",
          "https://two.example", "access-control-request-method", "POST"));
      assertEquals("https://two.example", preflight.header("access-control-allow-origin"));
      assertTrue(String.valueOf(preflight.header("vary")).toLowerCase(java.util.Locale.ROOT).contains("origin"), preflight.headers().toString());
    }
  }

  @Test
  void corsKeysAreValidatedNamingKeyValueAndExpectation() {
    io.vertx.core.json.JsonObject base = new io.vertx.core.json.JsonObject().put("model", "m")
        .put("engines", new io.vertx.core.json.JsonArray().add(new io.vertx.core.json.JsonObject().put("iid", "e0").put("url", "http://127.0.0.1:9")));
    narwhal.common.config.ConfigException e = assertThrows(narwhal.common.config.ConfigException.class, () ->
        narwhal.common.config.NarwhalConfig.fromJson(base.copy().put("server", new io.vertx.core.json.JsonObject().put("cors",
            new io.vertx.core.json.JsonObject().put("allowed_origins", new io.vertx.core.json.JsonArray().add("app.example.com"))))));
    assertTrue(e.getMessage().contains("server.cors.allowed_origins") && e.getMessage().contains("scheme://host"), e.getMessage());
    e = assertThrows(narwhal.common.config.ConfigException.class, () -> narwhal.common.config.NarwhalConfig.fromJson(base.copy()
        .put("server", new io.vertx.core.json.JsonObject().put("cors", new io.vertx.core.json.JsonObject().put("allowed_methods", "GET")))));
    assertTrue(e.getMessage().contains("server.cors.allowed_methods"), e.getMessage());
  }

  @Test
  void anUnknownExpectationIs417AndStreamsAreUtf8EventStreams() throws Exception {
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", h.router.actualPort())) {
      String body = "{\"prompt\":\"hi\",\"max_tokens\":2}";
      socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: teapot\r\n"
          + "Content-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      socket.setSoTimeout(10_000);
      String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertTrue(answer.startsWith("HTTP/1.1 417 "), answer);
    }
    RouterHarness.Reply stream = h.post("/v1/completions", new io.vertx.core.json.JsonObject().put("prompt", "hi").put("max_tokens", 2)
        .put("stream", true));
    assertEquals("text/event-stream; charset=utf-8", stream.contentType());
  }

  @Test
  void aNonStreamedAnswerIsCreatedAtArrival() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/completions", new io.vertx.core.json.JsonObject().put("prompt", "when").put("max_tokens", 2));
    long arrived = java.time.Instant.parse(h.journalRow(reply.requestId()).getString("arrived")).getEpochSecond();
    assertEquals(arrived, reply.json().getLong("created"));
  }
}
