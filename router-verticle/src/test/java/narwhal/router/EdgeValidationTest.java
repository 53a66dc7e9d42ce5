package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 26 at the edges of the API, against real simulated engines: {@code prompt_logprobs} computed by the prefill
 * and placed where vLLM places them (refused for streaming clients before any leg), {@code min_tokens} checked before
 * any leg, and a request without an output limit refused with vLLM's words for the client's request.
 */
@Timeout(120)
class EdgeValidationTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }


  /** The legs the engines saw for {@code rid}, prefill's and decode's, bodies included. */
  private static List<JsonObject> legs(String rid) {
    return java.util.stream.Stream.of("P0", "P1", "D0").flatMap(iid -> h.engine(iid).requests().stream())
        .filter(r -> String.valueOf(r.getValue("request_id")).contains(rid)).toList();
  }

  private static JsonObject leg(String rid, String phase) {
    return legs(rid).stream().filter(r -> String.valueOf(r.getValue("request_id")).endsWith("-" + phase)).findFirst()
        .orElseThrow(() -> new AssertionError("no " + phase + " leg for " + rid + ": " + legs(rid)));
  }

  @Test
  void completionPromptLogprobsComeFromThePrefillIntoTheChoice() {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "the river under a quiet bridge")
        .put("max_tokens", 4).put("prompt_logprobs", 2);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", body);
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(200, reply.status(), reply.body());
    JsonArray expected = direct.json().getJsonArray("choices").getJsonObject(0).getJsonArray("prompt_logprobs");
    assertNotNull(expected, direct.body());
    assertEquals(6, expected.size(), "one entry per prompt token");
    assertNull(expected.getValue(0), "vLLM has none for the first prompt token");
    assertEquals(expected, reply.json().getJsonArray("choices").getJsonObject(0).getJsonArray("prompt_logprobs"), reply.body());
    assertEquals(2, leg(reply.requestId(), "prefill").getJsonObject("body").getInteger("prompt_logprobs"),
        "the prefill computes the prompt");
    JsonObject decode = leg(reply.requestId(), "decode").getJsonObject("body");
    assertFalse(decode.containsKey("prompt_logprobs"), "the streamed decode leg must not ask: " + decode.encode());
  }

  @Test
  void chatPromptLogprobsAreTopLevelAsVllmPutsThem() {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "a lamp near the harbor")))
        .put("max_completion_tokens", 3).put("prompt_logprobs", 1);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/chat/completions", body);
    RouterHarness.Reply reply = h.post("/v1/chat/completions", body);
    assertEquals(200, reply.status(), reply.body());
    assertNotNull(direct.json().getJsonArray("prompt_logprobs"), direct.body());
    assertEquals(direct.json().getJsonArray("prompt_logprobs"), reply.json().getJsonArray("prompt_logprobs"), reply.body());
  }

  @Test
  void aStreamingClientAskingForPromptLogprobsGetsVllmsRefusalBeforeAnyLeg() throws Exception {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "stream me").put("max_tokens", 4)
        .put("stream", true).put("prompt_logprobs", 1);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", body);
    assertEquals(400, direct.status(), direct.body());
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(400, reply.status(), reply.body());
    assertEquals(direct.error().getString("message"), reply.error().getString("message"));
    assertEquals("`prompt_logprobs` are not available when `stream=True`.", reply.error().getString("message"));
    assertEquals("prompt_logprobs", reply.error().getString("param"));
    assertEquals("BadRequestError", reply.error().getString("type"));
    assertTrue(legs(reply.requestId()).isEmpty(), "no leg: " + legs(reply.requestId()));
    assertEquals("invalid", h.journalRow(reply.requestId()).getString("terminal"));
    RouterHarness.Reply zero = h.post("/v1/completions", body.copy().put("prompt_logprobs", 0));
    assertEquals(200, zero.status(), "vLLM takes 0 on a stream: " + zero.body());
    RouterHarness.Reply negative = h.post("/v1/completions", body.copy().put("stream", false).put("prompt_logprobs", -2));
    assertEquals(h.direct(h.engine("D0"), "/v1/completions", body.copy().put("stream", false).put("prompt_logprobs", -2)).json(),
        negative.json());
  }

  @Test
  void minTokensAreCheckedAsVllmChecksThemBeforeAnyLeg() throws Exception {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "at least ten").put("max_tokens", 4)
        .put("min_tokens", 10);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", body);
    assertEquals(400, direct.status(), direct.body());
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(400, reply.status(), reply.body());
    assertEquals(direct.json(), reply.json());
    assertEquals("min_tokens must be less than or equal to max_tokens=4, got 10.", reply.error().getString("message"));
    assertTrue(legs(reply.requestId()).isEmpty(), "no prefill left to its lease: " + legs(reply.requestId()));
    assertEquals(0, h.journalRow(reply.requestId()).getInteger("handoffs_left"));
    JsonObject negative = body.copy().put("min_tokens", -1);
    assertEquals(h.direct(h.engine("D0"), "/v1/completions", negative).json(), h.post("/v1/completions", negative).json());
    assertEquals(200, h.post("/v1/completions", body.copy().put("min_tokens", 2)).status());
  }

  @Test
  void anEnginesRefusalReachesTheClientWithoutEngineAddresses() throws Exception {
    java.net.URI producer = java.net.URI.create(h.engine("P0").url());
    String hostPort = producer.getHost() + ":" + producer.getPort();
    String words = "could not read KV from " + h.engine("P0").url() + "/v1/completions (remote " + hostPort + ", host "
        + producer.getHost() + "); see https://docs.vllm.ai/en/latest/";
    h.engine("D0").faults().add(new JsonObject().put("kind", "status").put("status", 400).put("phase", "decode").put("count", 1)
        .put("message", words));
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("prompt", "where are you").put("max_tokens", 3));
    assertEquals(400, reply.status(), reply.body());
    assertEquals("could not read KV from <engine> (remote <engine>, host <engine>); see https://docs.vllm.ai/en/latest/",
        reply.error().getString("message"), "engine addresses are not the client's to know");
    assertTrue(h.journalRow(reply.requestId()).encode().contains(hostPort), "the journal keeps the engine's words");
  }

  @Test
  void withoutAnOutputLimitTheRefusalIsVllmsForTheClientsRequest() throws Exception {
    // chat: vLLM's limit is what the context leaves; the template's "user:" is one token more than the words
    JsonObject tooLong = new JsonObject().put("model", RouterHarness.MODEL).put("messages", new JsonArray()
        .add(new JsonObject().put("role", "user").put("content", RouterHarness.words(4096))));
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/chat/completions", tooLong);
    assertEquals(400, direct.status(), direct.body());
    RouterHarness.Reply reply = h.post("/v1/chat/completions", tooLong);
    assertEquals(400, reply.status(), reply.body());
    assertEquals(direct.json(), reply.json(), "not the prefill leg's one output token");
    assertTrue(reply.error().getString("message").contains("you requested 0 output tokens"), reply.body());
    assertTrue(legs(reply.requestId()).stream().noneMatch(r -> String.valueOf(r.getValue("request_id")).endsWith("-prefill")));
    JsonObject full = tooLong.copy().put("messages", new JsonArray()
        .add(new JsonObject().put("role", "user").put("content", RouterHarness.words(4095))));
    RouterHarness.Reply filled = h.post("/v1/chat/completions", full);
    assertEquals(400, filled.status(), filled.body());
    assertEquals("max_tokens must be at least 1, got 0.", filled.error().getString("message"), "no room left for any output");
    assertEquals(h.direct(h.engine("D0"), "/v1/chat/completions", full).json(), filled.json(), "as the engine answers it");
    JsonObject fits = tooLong.copy().put("messages", new JsonArray()
        .add(new JsonObject().put("role", "user").put("content", RouterHarness.words(4094))));
    assertEquals(200, h.post("/v1/chat/completions", fits).status());
  }

  /** An output limit below 1 is refused before any leg, in the words vLLM's sampling check uses (`param` the field sent). */
  @Test
  void anOutputLimitBelowOneIsRefusedInVllmsWords() {
    List<String[]> cases = List.of(new String[] {"/v1/completions", "max_tokens", "0"}, new String[] {"/v1/completions", "max_tokens", "-3"},
        new String[] {"/v1/chat/completions", "max_completion_tokens", "0"});
    for (String[] c : cases) {
      JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put(c[1], Integer.parseInt(c[2]));
      if (c[0].contains("chat")) body.put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi")));
      else body.put("prompt", "hi");
      RouterHarness.Reply direct = h.direct(h.engine("D0"), c[0], body);
      assertEquals(400, direct.status(), direct.body());
      RouterHarness.Reply reply = h.post(c[0], body);
      assertEquals(direct.json(), reply.json(), String.join(" ", c));
      assertEquals("max_tokens must be at least 1, got " + c[2] + ".", reply.error().getString("message"));
    }
  }

  @Test
  void aCompletionWithoutMaxTokensHasVllmsDefaultOf16() throws Exception {
    JsonObject refused = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", RouterHarness.words(4096 - 15));
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", refused);
    assertEquals(400, direct.status(), direct.body());
    assertTrue(direct.error().getString("message").contains("you requested 16 output tokens"), direct.body());
    RouterHarness.Reply reply = h.post("/v1/completions", refused);
    assertEquals(400, reply.status(), reply.body());
    assertEquals(direct.json(), reply.json());
    assertTrue(legs(reply.requestId()).stream().noneMatch(r -> String.valueOf(r.getValue("request_id")).endsWith("-prefill")),
        "refused before any leg");
    RouterHarness.Reply fits = h.post("/v1/completions", refused.copy().put("prompt", RouterHarness.words(4096 - 16)));
    assertEquals(200, fits.status(), fits.body());
  }

}
