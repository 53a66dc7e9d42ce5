package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One id per request as vLLM gives it (docs/vllm.md#request-ids): the same in every chunk, the non-streamed answer and
 * {@code x-request-id}, the client's own {@code x-request-id} when it sends one; no leg name reaches the client; the
 * explicit nulls of vLLM's non-streamed body are kept.
 */
@Timeout(60)
class ClientIdsTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json);
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  private static JsonObject completion(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "the narwhal swims").put("max_tokens", 6)
        .put("stream", stream).put("ignore_eos", true);
  }

  private static JsonObject chat(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 5).put("stream", stream)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hello there")));
  }

  private static void everyChunkHasId(RouterHarness.Reply reply, String id) {
    List<String> events = reply.events();
    assertTrue(events.size() > 2, reply.body());
    for (String e : events) {
      if (!e.equals("[DONE]")) assertEquals(id, new JsonObject(e).getString("id"), e);
    }
    assertFalse(reply.body().contains("-a1-"), "no leg name in what the client sees: " + reply.body());
  }

  @Test
  void theClientsRequestIdIsTheAnswersIdInEveryChunkAndTheHeader() {
    RouterHarness.Reply streamed = h.post("/v1/completions", completion(true).toBuffer(), Map.of("x-request-id", "client-abc"));
    assertEquals(200, streamed.status(), streamed.body());
    assertEquals("client-abc", streamed.requestId());
    everyChunkHasId(streamed, "cmpl-client-abc");
    RouterHarness.Reply chatStream = h.post("/v1/chat/completions", chat(true).toBuffer(), Map.of("x-request-id", "client-def"));
    everyChunkHasId(chatStream, "chatcmpl-client-def");
    RouterHarness.Reply whole = h.post("/v1/chat/completions", chat(false).toBuffer(), Map.of("x-request-id", "client-ghi"));
    assertEquals("client-ghi", whole.requestId());
    assertEquals("chatcmpl-client-ghi", whole.json().getString("id"));
    assertFalse(whole.body().contains("-a1-"), whole.body());
  }

  @Test
  void withoutAClientIdTheRoutersIdIsUsedAlike() {
    RouterHarness.Reply streamed = h.post("/v1/chat/completions", chat(true));
    everyChunkHasId(streamed, "chatcmpl-" + streamed.requestId());
    RouterHarness.Reply whole = h.post("/v1/completions", completion(false));
    assertEquals("cmpl-" + whole.requestId(), whole.json().getString("id"));
    RouterHarness.Reply own = h.post("/v1/completions", completion(false).put("request_id", "body-id-1"));
    assertEquals("cmpl-body-id-1", own.json().getString("id"), "vLLM's body request_id when no header names one");
    assertEquals("body-id-1", own.requestId());
  }

  @Test
  void nonStreamedAnswersKeepTheEnginesExplicitNulls() {
    JsonObject chatAnswer = h.post("/v1/chat/completions", chat(false)).json();
    for (String key : new String[] {"system_fingerprint", "service_tier", "prompt_logprobs", "kv_transfer_params"}) {
      assertTrue(chatAnswer.containsKey(key) && chatAnswer.getValue(key) == null, key + ": " + chatAnswer.encode());
    }
    JsonObject message = chatAnswer.getJsonArray("choices").getJsonObject(0).getJsonObject("message");
    for (String key : new String[] {"refusal", "annotations", "audio", "function_call"}) {
      assertTrue(message.containsKey(key), key + ": " + message.encode());
      assertNull(message.getValue(key));
    }
    JsonObject choice = h.post("/v1/completions", completion(false)).json().getJsonArray("choices").getJsonObject(0);
    assertTrue(choice.containsKey("prompt_logprobs") && choice.containsKey("stop_reason"), choice.encode());
  }

  /** An id past the bound (docs/errors.md): 400 naming the header, no engine asked, neither echoed nor journalled. */
  @Test
  void aRequestIdPastTheBoundIsRefusedNamingTheHeader() throws Exception {
    String longest = "r".repeat(RequestIdBound.MAX_CHARS);
    RouterHarness.Reply kept = h.post("/v1/completions", completion(false).toBuffer(), Map.of("x-request-id", longest));
    assertEquals(200, kept.status(), kept.body());
    assertEquals(longest, kept.requestId());

    for (String bad : List.of(longest + "r", "has space", "x".repeat(7000))) {
      h.resetEngines();
      for (String path : List.of("/v1/completions", "/v1/responses", "/tokenize")) {
        RouterHarness.Reply refused = h.post(path, completion(false).toBuffer(), Map.of("x-request-id", bad));
        assertEquals(400, refused.status(), path + ": " + refused.body());
        assertEquals("x-request-id", refused.error().getString("param"), refused.body());
        assertTrue(refused.error().getString("message").startsWith("x-request-id: expected at most 256 visible ASCII characters"),
            refused.body());
        assertFalse(refused.body().contains(bad), "the id is not repeated");
        assertFalse(refused.requestId().equals(bad), "the router's own id answers for it");
        JsonObject row = h.journalRow(refused.requestId());
        assertEquals("invalid", row.getString("terminal"), row.encode());
        assertNull(row.getValue("client_rid"), row.encode());
      }
      assertTrue(h.engine("P0").requests().isEmpty() && h.engine("D0").requests().isEmpty(), "no engine asked");
    }
  }

  /** The body's {@code request_id} answers for the request as the header does, so it has the header's bound. */
  @Test
  void aBodyRequestIdPastTheBoundIsRefusedNamingTheField() {
    for (String bad : List.of("r".repeat(RequestIdBound.MAX_CHARS + 1), "split\r\nset-cookie: x=1", "caf\u00e9")) {
      h.resetEngines();
      RouterHarness.Reply refused = h.post("/v1/completions", completion(false).put("request_id", bad).toBuffer(), Map.of());
      assertEquals(400, refused.status(), refused.body());
      assertEquals("request_id", refused.error().getString("param"), refused.body());
      assertFalse(refused.requestId().equals(bad), "the router's own id answers for it");
      assertTrue(h.engine("P0").requests().isEmpty() && h.engine("D0").requests().isEmpty(), "no engine asked");
    }
  }
}
