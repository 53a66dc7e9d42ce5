package narwhal.router;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Requests refused at the edge get the contract's status and JSON error, a request id and a journal row. */
@Timeout(60)
class EdgeErrorsTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_request_bytes", 2048).put("receive_timeout_s", 0.5)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  private static void assertError(RouterHarness.Reply reply, int status, String type, String messageStart) {
    assertEquals(status, reply.status(), reply.body());
    assertNotNull(reply.requestId(), "x-request-id on every response");
    JsonObject error = reply.error();
    assertEquals(type, error.getString("type"), error.encode());
    assertTrue(error.getString("message").startsWith(messageStart), error.encode());
  }

  @Test
  void bodyThatIsNotAJsonObjectIs400() {
    assertError(h.post("/v1/completions", Buffer.buffer("{not json"), Map.of()), 400, "BadRequestError", "body");
    assertError(h.post("/v1/completions", Buffer.buffer("[1,2]"), Map.of()), 400, "BadRequestError", "body");
    assertError(h.post("/v1/completions", Buffer.buffer(new byte[] {'{', '"', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'}), Map.of()),
        400, "BadRequestError", "");
  }

  @Test
  void nullAtTopLevelAndInvalidUtf8AreRefused() {
    assertError(h.post("/v1/completions", Buffer.buffer("null"), Map.of()), 400, "BadRequestError", "body");
    byte[] overlongSlash = {'{', '"', 'p', 'r', 'o', 'm', 'p', 't', '"', ':', '"', (byte) 0xC0, (byte) 0xAF, '"', '}'};
    assertError(h.post("/v1/completions", Buffer.buffer(overlongSlash), Map.of()), 400, "BadRequestError", "body");
    byte[] encodedSurrogate = {'{', '"', 'p', 'r', 'o', 'm', 'p', 't', '"', ':', '"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"', '}'};
    assertError(h.post("/v1/completions", Buffer.buffer(encodedSurrogate), Map.of()), 400, "BadRequestError", "body");
  }

  /** R5: a body past the JSON parser's limits is refused with a message naming the limit, not as "not an object". */
  @Test
  void jsonPastTheParsersLimitsIsNamed() throws Exception {
    String deep = "{\"prompt\":" + "[".repeat(1001) + "]".repeat(1001) + "}";
    RouterHarness.Reply reply = h.post("/v1/completions", Buffer.buffer(deep), Map.of());
    assertError(reply, 400, "BadRequestError", "body: JSON nested deeper than 1000 levels");
    assertEquals("invalid", h.journalRow(reply.requestId()).getString("terminal"));
    String longNumber = "{\"prompt\":\"x\",\"max_tokens\":" + "9".repeat(1500) + "}";
    assertError(h.post("/v1/completions", Buffer.buffer(longNumber), Map.of()), 400, "BadRequestError",
        "body: a JSON number longer than 1000 characters");
    assertError(h.post("/v1/completions", Buffer.buffer("{\"prompt\":[[[\"x\"]]]"), Map.of()), 400, "BadRequestError",
        "body: expected a JSON object in UTF-8");
  }

  /** A head the decoder refuses (headers past its limit) is answered, journaled, and errors.md says so. */
  @Test
  void headersTooLargeAre431WithAJournalRowAsErrorsMdSays() throws Exception {
    RouterHarness.Reply reply = h.get("/v1/models", Map.of("x-padding", "a".repeat(20_000)));
    assertError(reply, 431, "invalid_request_error", "request headers too large");
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("invalid", row.getString("terminal"));
    assertEquals(431, row.getInteger("status"));
    java.util.Map<String, String> documented = DocPages.rows("errors.md", "edge reason").stream()
        .filter(r -> r.get("status").equals("`431`")).findFirst().orElseThrow();
    assertEquals("`" + row.getString("terminal") + "`", documented.get("terminal"), "errors.md's 431 row: " + documented);
  }

  @Test
  void slowSendersAreCutOffAtTheReceiveTimeout() throws Exception {
    try (java.net.Socket silent = new java.net.Socket("127.0.0.1", h.router.actualPort())) {
      silent.setSoTimeout(10_000);
      assertEquals(-1, silent.getInputStream().read(), "a connection that sends nothing is closed");
    }
    try (java.net.Socket slowBody = new java.net.Socket("127.0.0.1", h.router.actualPort())) {
      slowBody.setSoTimeout(10_000);
      slowBody.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
          + "content-length: 1000\r\n\r\n{\"prompt\":").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      slowBody.getOutputStream().flush();
      String answer = new String(slowBody.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII);
      assertTrue(answer.startsWith("HTTP/1.1 408"), answer);
      assertTrue(answer.contains("request_timeout"), answer);
    }
  }

  /** R5: requests Vert.x's HTTP/1.1 decoder cannot frame get the contract's 400, then the connection is closed. */
  @Test
  void framingErrorsAreAnswered400ThenClosed() throws Exception {
    for (String raw : List.of(
        "POST /v1/completions HTTP/7.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        "POST /v1/completions\r\n\r\n",
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")) {
      try (java.net.Socket socket = new java.net.Socket("127.0.0.1", h.router.actualPort())) {
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(raw.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
        String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        String what = raw.lines().findFirst().orElseThrow() + " -> " + answer;
        assertTrue(answer.matches("(?s)HTTP/1\\.[01] 400 .*"), what);
        String head = answer.substring(0, answer.indexOf("\r\n\r\n")).toLowerCase(java.util.Locale.ROOT);
        assertTrue(head.contains("\r\nx-request-id: "), what);
        assertTrue(head.contains("\r\nconnection: close"), what);
        JsonObject error = new JsonObject(answer.substring(answer.indexOf("\r\n\r\n") + 4)).getJsonObject("error");
        assertEquals("BadRequestError", error.getString("type"), what);
      }
    }
  }

  @Test
  void wrongFieldTypesAreNamed() {
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("prompt", 5));
    assertError(reply, 400, "BadRequestError", "prompt");
    assertEquals("prompt", reply.error().getString("param"));
    assertError(h.post("/v1/completions", new JsonObject().put("prompt", "x").put("max_tokens", "ten")), 400,
        "BadRequestError", "max_tokens");
    assertError(h.post("/v1/chat/completions", new JsonObject().put("messages", "hi")), 400, "BadRequestError", "messages");
    assertError(h.post("/v1/completions", new JsonObject().put("prompt", "x").put("n", 2)), 400, "BadRequestError", "n");
    assertError(h.post("/v1/completions", new JsonObject().put("prompt", "x").put("best_of", 3)), 400, "BadRequestError", "best_of");
    assertError(h.post("/v1/completions", new JsonObject().put("prompt", "x").put("stream_options", new JsonObject())), 400,
        "BadRequestError", "Stream options can only be defined when `stream=True`.");
  }

  @Test
  void unknownModelIs404() {
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("model", "gpt-9").put("prompt", "x"));
    assertError(reply, 404, "NotFoundError", "The model `gpt-9` does not exist.");
    assertEquals(404, reply.error().getInteger("code"));
  }

  @Test
  void oversizedBodyIs413AndJournalled() throws Exception {
    String prompt = "x".repeat(4096);
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("prompt", prompt));
    assertError(reply, 413, "request_too_large", "");
    assertEquals("invalid", h.journalRow(reply.requestId()).getString("terminal"));
  }

  @Test
  void clientRequestIdIsTheAnswersIdJournalledNotForwarded() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/completions",
        new JsonObject().put("prompt", "hello there").put("max_tokens", 3).toBuffer(), Map.of("x-request-id", "client-abc"));
    assertEquals(200, reply.status(), reply.body());
    assertEquals("client-abc", reply.requestId(), "the client's id is the answer's, as vLLM answers");
    assertEquals("cmpl-client-abc", reply.json().getString("id"));
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("client-abc", row.getString("client_rid"));
    assertNotEquals("client-abc", row.getString("rid"));
    h.engines.values().forEach(e -> e.requests().forEach(r -> assertTrue(r.getString("request_id").startsWith(row.getString("rid")))));
  }

  @Test
  void invalidRequestsAreJournalled() throws Exception {
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("prompt", new JsonArray()));
    assertEquals(400, reply.status());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("invalid", row.getString("terminal"));
    assertEquals(400, row.getInteger("status"));
  }

  @Test
  void unknownPathIs404Json() {
    assertError(h.get("/v2/nothing"), 404, "invalid_request_error", "no route");
  }
}
