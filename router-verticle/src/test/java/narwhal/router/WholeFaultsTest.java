package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How a request an engine runs whole fails (docs/errors.md), on real simulated engines behind a real router: an answer
 * larger than {@code serving.max_response_bytes} is the client's request, not the engine's fault, so it is no evidence
 * against the engine; an engine's own refusal carries its error type to the journal; the simulator's faults on a whole
 * endpoint end as the same faults of a completion do: a hung or cut engine before the first byte is the documented
 * timeout or connection fault, retried on another engine; a stream gone silent after it ends with the terminal event.
 */
@Timeout(120)
class WholeFaultsTest {
  /** A prompt whose {@code /tokenize} answer (its token ids) is larger than the smallest response bound, 1024 bytes. */
  private static String hugePrompt() {
    StringBuilder prompt = new StringBuilder();
    for (int i = 0; i < 400; i++) prompt.append("word").append(i).append(' ');
    return prompt.toString();
  }

  @Test
  void anOversizedAnswerIsAClearErrorAndNoEvidenceAgainstTheEngine() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("serving", new JsonObject().put("max_response_bytes", 1024))
        .put("recovery", new JsonObject().put("eject_after", 1)))) {
      RouterHarness.Reply big = h.post("/tokenize", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", hugePrompt()));
      assertEquals(502, big.status(), big.body());
      assertTrue(big.error().getString("message").contains("serving.max_response_bytes"), big.body());
      JsonObject row = h.journalRow(big.requestId());
      assertEquals("response_too_large", row.getString("reason"), row.encode());
      assertEquals(1, row.getInteger("attempts"), "not retried: " + row.encode());

      h.placementSettled();
      JsonObject d0 = h.get("/narwhal/state").json().getJsonArray("engines").stream().map(JsonObject.class::cast)
          .filter(e -> "D0".equals(e.getString("iid"))).findFirst().orElseThrow();
      assertEquals(0, d0.getJsonObject("streaks").getInteger("inference_status"), "no evidence: " + d0.encode());
      assertNull(d0.getValue("cause"), "one failure of a class ejects with eject_after 1: " + d0.encode());
      RouterHarness.Reply small = h.post("/tokenize", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "a narwhal"));
      assertEquals(200, small.status(), "the engine still serves: " + small.body());
    }
  }

  private static RouterHarness faultFleet() throws Exception {
    return RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("engine", new JsonObject().put("first_token_timeout_s", 0.5).put("decode_read_timeout_s", 0.5))
        .put("serving", new JsonObject().put("max_attempts", 2))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)));
  }

  @ParameterizedTest(name = "{0} on {1}, stream {2}")
  @CsvSource({
      "hang_before_headers, /v1/responses, true, first_token_timeout",
      "hang_after_headers, /v1/responses, true, first_token_timeout",
      "reset, /v1/embeddings, false, connection_reset",
      "close_before_done, /v1/embeddings, false, connection_reset",
      "close_before_done, /v1/responses, false, connection_reset",
      "status_503, /detokenize, false, engine_overloaded"})
  void aFaultBeforeTheFirstByteIsItsDocumentedFaultRetriedOnTheOtherEngine(String kind, String path, boolean stream,
                                                                             String reason) throws Exception {
    try (RouterHarness h = faultFleet()) {
      JsonObject rule = kind.equals("status_503") ? new JsonObject().put("kind", "status").put("status", 503)
          : new JsonObject().put("kind", kind);
      h.engine("D0").faults().add(rule.put("phase", "decode").put("count", 100));
      JsonObject body = switch (path) {
        case "/v1/responses" -> new JsonObject().put("input", "the arctic").put("max_output_tokens", 4).put("stream", stream);
        case "/detokenize" -> new JsonObject().put("tokens", new io.vertx.core.json.JsonArray().add(1));
        default -> new JsonObject().put("input", "the arctic");
      };
      JsonObject retried = null;
      for (int i = 0; i < 4 && retried == null; i++) {
        RouterHarness.Reply reply = h.post(path, body);
        assertEquals(200, reply.status(), "served by D1 in the end: " + reply.body());
        if (stream) assertTrue(reply.body().contains("response.completed"), reply.body());
        JsonObject row = FailureChecks.rowFor(h, reply.requestId());
        assertEquals("completed", row.getString("terminal"), row.encode());
        assertEquals("D1", row.getString("decode_iid"), row.encode());
        if (row.getInteger("attempts") == 2) retried = row;
      }
      assertTrue(retried != null, "placement takes turns: one of four requests was first placed on D0");
      JsonObject failure = retried.getJsonArray("attempt_failures").getJsonObject(0);
      assertEquals(reason, failure.getString("reason"), retried.encode());
      assertEquals("D0", failure.getString("decode_iid"), retried.encode());
      assertEquals("allowed", failure.getString("retry_reason"), retried.encode());
      FailureChecks.allReleased(h);
    }
  }

  /**
   * {@code stream: true} on an endpoint that never streams (vLLM ignores the field there and answers JSON): the answer
   * is waited for as any JSON answer, up to the request deadline, not {@code engine.first_token_timeout_s}.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource({"/v1/embeddings", "/detokenize"})
  void streamTrueOnAnEndpointThatNeverStreamsIsTimedAsAJsonAnswer(String path) throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("engine", new JsonObject().put("first_token_timeout_s", 0.2))
        .put("serving", new JsonObject().put("request_timeout_s", 1.5).put("max_attempts", 1))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)))) {
      h.engine("D0").faults().add(new JsonObject().put("kind", "hang_before_headers").put("phase", "decode").put("count", 1));
      JsonObject body = path.equals("/detokenize") ? new JsonObject().put("tokens", new io.vertx.core.json.JsonArray().add(1))
          : new JsonObject().put("input", "the arctic");
      RouterHarness.Reply reply = h.post(path, body.put("model", RouterHarness.MODEL).put("stream", true));
      JsonObject row = FailureChecks.rowFor(h, reply.requestId());
      assertEquals(504, reply.status(), "the deadline, not the first-token timeout, ended the wait: " + row.encode());
      assertEquals("expired", row.getString("terminal"), row.encode());
      assertTrue(row.getJsonArray("attempt_failures").isEmpty(), row.encode());
      assertEquals(200, h.post(path, body).status(), "the answer is JSON whatever stream says");
      FailureChecks.allReleased(h);
    }
  }

  @Test
  void aStreamedResponseWhoseTokensComeTooSlowlyEndsWithTheTerminalEvent() throws Exception {
    try (RouterHarness h = faultFleet()) {
      for (String iid : List.of("D0", "D1")) {
        h.engine(iid).faults().add(new JsonObject().put("kind", "slow_tokens").put("itl_ms", 5_000).put("phase", "decode"));
      }
      RouterHarness.Reply reply = h.post("/v1/responses", new JsonObject().put("input", "the arctic").put("max_output_tokens", 4)
          .put("stream", true));
      assertEquals(200, reply.status(), "committed with the first delta: " + reply.body());
      assertEquals(1, reply.body().lines().filter(l -> l.equals("event: response.output_text.delta")).count(), reply.body());
      assertTrue(reply.body().contains("\"type\":\"decode\"") && reply.body().contains("engine went silent"), reply.body());
      JsonObject row = FailureChecks.rowFor(h, reply.requestId());
      assertEquals("decode_read_timeout", row.getString("reason"), row.encode());
      assertEquals(1, row.getInteger("attempts"), "not retried after output: " + row.encode());
      FailureChecks.allReleased(h);
    }
  }

  @Test
  void aStreamedResponseCutBeforeItsClosingEventEndsWithTheTerminalEvent() throws Exception {
    try (RouterHarness h = faultFleet()) {
      for (String iid : List.of("D0", "D1")) {
        h.engine(iid).faults().add(new JsonObject().put("kind", "close_before_done").put("after", 2).put("phase", "decode"));
      }
      RouterHarness.Reply reply = h.post("/v1/responses", new JsonObject().put("input", "the arctic").put("max_output_tokens", 4)
          .put("stream", true));
      assertEquals(200, reply.status(), reply.body());
      assertEquals(2, reply.body().lines().filter(l -> l.equals("event: response.output_text.delta")).count(), reply.body());
      assertTrue(reply.body().contains("stream ended before its response.completed event"), reply.body());
      JsonObject row = FailureChecks.rowFor(h, reply.requestId());
      assertEquals("failed", row.getString("terminal"), row.encode());
      assertEquals("eof_before_done", row.getString("reason"), row.encode());
      FailureChecks.allReleased(h);
    }
  }

  @Test
  void anEnginesOwnRefusalCarriesItsErrorTypeToTheJournal() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      RouterHarness.Reply reply = h.post("/detokenize", new JsonObject().put("tokens", "not a list"));
      assertEquals(400, reply.status(), reply.body());
      JsonObject row = h.journalRow(reply.requestId());
      assertEquals("engine_rejected", row.getString("reason"), row.encode());
      assertEquals(reply.error().getString("type"), row.getString("error_type"), row.encode());
    }
  }

  @Test
  void anEmptyModelIsRefusedNamingTheField() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      RouterHarness.Reply reply = h.post("/v1/embeddings", new JsonObject().put("model", "").put("input", "x"));
      assertEquals(400, reply.status(), reply.body());
      assertEquals("model", reply.error().getString("param"), reply.body());
      assertEquals("BadRequestError", reply.error().getString("type"), reply.body());
      assertTrue(h.engine("D0").requests().isEmpty(), "refused at the edge");
    }
  }
}
