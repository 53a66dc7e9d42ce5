package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Tenants on real simulated engines over HTTP (docs/operations.md#sharing-a-fleet): a tenant's key names it in the
 * journal and metrics; its request quota answers 429 {@code rate_limit_exceeded} with {@code Retry-After}, and every
 * answer carries OpenAI's {@code x-ratelimit-*} headers; with the legs saturated, a steady tenant's request is served
 * before the backlog a flooding tenant queued earlier; a key given to two tenants is refused naming the key.
 */
@Timeout(90)
class TenantsTest {
  static final String FLOOD = "sk-flood";
  static final String STEADY = "sk-steady";
  static final String LIMITED = "sk-limited";
  static RouterHarness h;
  /** Enough connections for every request of a test at once (the harness's client has Vert.x's five). */
  static io.vertx.core.http.HttpClientAgent wide;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        fleet -> fleet.put("serving", new JsonObject().put("max_legs_in_flight", 1))
            .put("flow", new JsonObject().put("queue_timeout_s", 60))
            .put("tenants", new JsonObject()
                .put("flood", new JsonObject().put("api_key_env", "T_FLOOD").put("class", "low"))
                .put("steady", new JsonObject().put("api_key_env", "T_STEADY"))
                .put("limited", new JsonObject().put("api_key_env", "T_LIMITED").put("requests_per_minute", 2))),
        (iid, options) -> options.setItlMs(15),
        Map.of("T_FLOOD", FLOOD, "T_STEADY", STEADY, "T_LIMITED", LIMITED));
    wide = h.vertx.createHttpClient(new io.vertx.core.http.PoolOptions().setHttp1MaxSize(32));
  }

  /** POSTs a completion with {@code key} on the wide client; completes with the answer's status and request id. */
  private static Future<String[]> post(JsonObject body, String key) {
    io.vertx.core.http.RequestOptions options = new io.vertx.core.http.RequestOptions().setMethod(io.vertx.core.http.HttpMethod.POST)
        .setAbsoluteURI(h.routerUrl() + "/v1/completions").putHeader("content-type", "application/json")
        .putHeader("authorization", "Bearer " + key);
    return h.onContext(() -> wide.request(options).compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> new String[] {String.valueOf(resp.statusCode()), resp.getHeader("x-request-id")})));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  private static JsonObject completion(int tokens) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "whose turn is it").put("max_tokens", tokens);
  }

  private static Map<String, String> key(String key) {
    return Map.of("authorization", "Bearer " + key, "content-type", "application/json");
  }

  @Test
  void aQuotaRefusesWith429AndEveryAnswerCarriesTheRateLimitHeaders() throws Exception {
    RouterHarness.Reply first = h.post("/v1/completions", completion(2).toBuffer(), key(LIMITED));
    assertEquals(200, first.status(), first.body());
    assertEquals("2", first.headers().get("x-ratelimit-limit-requests"));
    assertEquals("1", first.headers().get("x-ratelimit-remaining-requests"));
    assertTrue(first.headers().get("x-ratelimit-reset-requests").matches("\\d+s|1m0s"), first.headers().get("x-ratelimit-reset-requests"));
    assertEquals(200, h.post("/v1/completions", completion(2).toBuffer(), key(LIMITED)).status());
    RouterHarness.Reply over = h.post("/v1/completions", completion(2).toBuffer(), key(LIMITED));
    assertEquals(429, over.status(), over.body());
    JsonObject error = new JsonObject(over.body()).getJsonObject("error");
    assertEquals("rate_limit_exceeded", error.getString("code"));
    assertEquals("requests", error.getString("type"));
    assertTrue(error.getString("message").contains("tenants.limited.requests_per_minute"), error.getString("message"));
    assertNotNull(over.retryAfter());
    assertTrue(Integer.parseInt(over.retryAfter()) >= 1 && Integer.parseInt(over.retryAfter()) <= 60, over.retryAfter());
    assertEquals("0", over.headers().get("x-ratelimit-remaining-requests"));
    JsonObject row = h.journalRow(over.requestId());
    assertEquals("rejected", row.getString("terminal"));
    assertEquals("quota_requests", row.getString("reason"));
    assertEquals("limited", row.getString("tenant"));
    assertEquals("normal", row.getString("class"));
    String metrics = h.get("/metrics").body();
    assertTrue(metrics.contains("narwhal_tenant_requests_total{class=\"normal\",outcome=\"over_quota\",tenant=\"limited\"} 1.0"), metrics);
    assertEquals(401, h.post("/v1/completions", completion(2).toBuffer(), key("sk-nobody")).status(), "tenant keys close the router to others");
  }

  @Test
  void withTheLegsSaturatedASteadyTenantIsServedBeforeAFloodsBacklog() throws Exception {
    List<String> finished = Collections.synchronizedList(new ArrayList<>());
    List<Future<String[]>> replies = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      String label = "flood-" + i;
      replies.add(post(completion(12), FLOOD).onSuccess(r -> finished.add(label)));
    }
    waitForQueued(5);
    Future<String[]> steady = post(completion(12), STEADY).onSuccess(r -> finished.add("steady"));
    replies.add(steady);
    for (Future<String[]> reply : replies) assertEquals("200", RouterHarness.await(reply)[0]);
    assertTrue(finished.indexOf("steady") <= 1, "the steady tenant (class normal) goes before the flood's backlog "
        + "(class low) queued earlier: " + finished);
    JsonObject row = h.journalRow(RouterHarness.await(steady)[1]);
    assertEquals("completed", row.getString("terminal"));
    assertEquals("steady", row.getString("tenant"));
  }

  /** Waits until {@code n} attempts wait for a turn in the router's queue, as {@code /narwhal/state} shows them. */
  private static void waitForQueued(int n) throws InterruptedException {
    for (int i = 0; i < 400; i++) {
      JsonObject flow = h.get("/narwhal/state").json().getJsonObject("flow");
      if (flow != null && flow.getInteger("waiting", 0) >= n) {
        assertEquals(n, flow.getJsonObject("waiting_by_tenant").getInteger("flood"));
        return;
      }
      Thread.sleep(25);
    }
    throw new AssertionError("never saw " + n + " attempts queued");
  }

  @Test
  void aKeyGivenToTwoTenantsIsRefusedNamingTheKey() {
    NarwhalConfig cfg = NarwhalConfig.fromJson(new JsonObject().put("model", "m")
        .put("engines", new io.vertx.core.json.JsonArray().add(new JsonObject().put("iid", "e0").put("url", "http://127.0.0.1:9")))
        .put("tenants", new JsonObject().put("a", new JsonObject().put("api_key_env", "KA"))
            .put("b", new JsonObject().put("api_key_env", "KB"))));
    ConfigException e = assertThrows(ConfigException.class,
        () -> Access.resolve(cfg, name -> switch (name) { case "KA" -> "k1,shared"; case "KB" -> "shared"; default -> null; }));
    assertEquals("tenants.b.api_key_env", e.key());
    assertTrue(e.getMessage().contains("tenant a"), e.getMessage());
  }

  @Test
  void theTenantHeaderNamesOnlyTenantsWithoutKeysOfTheirOwn() {
    NarwhalConfig cfg = NarwhalConfig.fromJson(new JsonObject().put("model", "m")
        .put("engines", new io.vertx.core.json.JsonArray().add(new JsonObject().put("iid", "e0").put("url", "http://127.0.0.1:9")))
        .put("flow", new JsonObject().put("tenant_header", "x-team"))
        .put("tenants", new JsonObject().put("vip", new JsonObject().put("api_key_env", "KV").put("class", "high"))
            .put("lab", new JsonObject().put("class", "low"))));
    Tenants tenants = Access.resolve(cfg, name -> "KV".equals(name) ? "sk-vip" : null).tenants();
    assertEquals("vip", tenants.of(tenants.ofKey("sk-vip"), "lab").name(), "the key wins over the header");
    assertEquals("lab", tenants.of(null, "lab").name());
    assertEquals("default", tenants.of(null, "vip").name(), "a keyed tenant is not claimed by a header");
    assertEquals("default", tenants.of(null, "nobody").name());
  }

  @Test
  void aReloadAppliesTenantsKeysAndQuotasToTheNextRequests() throws Exception {
    try (RouterHarness r = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        fleet -> fleet.put("tenants", new JsonObject().put("a", new JsonObject().put("api_key_env", "T_A"))),
        (iid, options) -> { }, Map.of("T_A", "sk-a", "T_B", "sk-b"))) {
      assertEquals(401, r.post("/v1/completions", completion(2).toBuffer(), key("sk-b")).status(), "b is no tenant yet");
      JsonObject json = r.config.toJson();
      json.getJsonObject("tenants").put("b", new JsonObject().put("api_key_env", "T_B").put("requests_per_minute", 1));
      r.config = NarwhalConfig.fromJson(json);
      r.vertx.eventBus().publish(narwhal.common.bus.Addresses.CONFIG_CHANGED, r.config.toJson());
      RouterHarness.Reply first = null;
      for (int i = 0; i < 200 && (first == null || first.status() == 401); i++) {
        first = r.post("/v1/completions", completion(2).toBuffer(), key("sk-b"));
      }
      assertEquals(200, first.status(), "b's key works after the reload: " + first.body());
      assertEquals("1", first.headers().get("x-ratelimit-limit-requests"));
      assertEquals(429, r.post("/v1/completions", completion(2).toBuffer(), key("sk-b")).status(), "its quota applies");
      assertEquals(200, r.post("/v1/completions", completion(2).toBuffer(), key("sk-a")).status());
      assertEquals("a", r.journalRow(r.post("/v1/completions", completion(2).toBuffer(), key("sk-a")).requestId()).getString("tenant"));
    }
  }
}
