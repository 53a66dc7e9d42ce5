package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static narwhal.router.FailureChecks.allReleased;
import static narwhal.router.FailureChecks.namesNoEngine;
import static narwhal.router.FailureChecks.rowFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * R1, the fault matrix: every simulator fault kind × streaming / non-streaming client × the leg it is
 * injected into, through a real router in front of real simulated engines (P0 producer, D0 consumer).
 * Each case asserts what the client got (status, type and message — or, after a committed 200, one terminal
 * {@code data: {"error": …}} event and no {@code [DONE]}), that the client got it at all (the harness awaits
 * with a bound), reservations back to zero, no leg left running on any engine, and exactly one journal row with
 * the right terminal, status, error type and attempt failure.
 *
 * <p>Combinations that are not meaningful, and why:
 * <ul>
 *   <li>{@code descriptor_*} and {@code lease_expiry} on the decode leg: they shape the handoff a prefill
 *       returns; the simulator only lets a prefill consume them.</li>
 *   <li>{@code kv_transfer_fail} on the prefill leg: a prefill carries no handoff to pull; only a decode with
 *       {@code do_remote_prefill} can consume it.</li>
 *   <li>{@code health_503} on either leg: it is engine state ({@code /health} answers 503), not a per-request
 *       fault; the router does not consult {@code /health} on the request path, so a request still completes
 *       (checked once below). Liveness ejection is the breaker's, tested there.</li>
 *   <li>Output-dependent kinds on the prefill leg ({@code metadata_then_output}, {@code done_before_output},
 *       {@code close_before_done}, {@code silence_after}, {@code error_in_stream}, {@code slow_tokens}): the
 *       prefill is a non-streamed one-token request, so they cannot take their streaming shape. They are still
 *       run, with the shape they do take there: a delay (success), a 200 without a handoff (missing
 *       descriptor), a body cut mid-way (connection failure), a response that never completes (prefill
 *       timeout), a plain HTTP error status, one token (success).</li>
 *   <li>A prefill fault after a committed 200: impossible, prefill ends before any client output, so prefill
 *       faults are ordinary HTTP errors for streaming clients too.</li>
 * </ul>
 */
@Timeout(180)
class FaultMatrixTest {
  static RouterHarness h;
  static String expectedText;
  static String expectedChatText;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("engine", new JsonObject().put("first_token_timeout_s", 0.5).put("decode_read_timeout_s", 0.5))
        .put("serving", new JsonObject().put("prefill_timeout_s", 1))
        // The breaker is not under test here: no verdict may take an engine away between cases.
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)));
    expectedText = FailureChecks.direct(h, h.engine("D0"), "/v1/completions", completion(false)).json()
        .getJsonArray("choices").getJsonObject(0).getString("text");
    expectedChatText = FailureChecks.direct(h, h.engine("D0"), "/v1/chat/completions", chat(false)).json()
        .getJsonArray("choices").getJsonObject(0).getJsonObject("message").getString("content");
    assertTrue(expectedText.length() > 0 && expectedChatText.length() > 0);
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  /** What one engine answers directly for {@link #completion}: the text any correct path must relay. */
  static String expectedTextFor(RouterHarness harness) {
    SimEngine consumer = harness.engines.values().stream().reduce((a, b) -> b).orElseThrow();
    return FailureChecks.direct(harness, consumer, "/v1/completions", completion(false)).json().getJsonArray("choices").getJsonObject(0).getString("text");
  }

  static JsonObject completion(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "The narwhal swims under the arctic ice")
        .put("max_tokens", 8).put("ignore_eos", true).put("temperature", 0.7).put("seed", 42).put("stream", stream);
  }

  static JsonObject chat(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("stream", stream).put("max_tokens", 8).put("ignore_eos", true)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "tell me about tusks")));
  }

  // ---- expectations

  /** What the client must get. {@code afterOutput}: a streaming client sees a committed 200 and a terminal error event. */
  record Expect(boolean succeeds, int status, String type, String message, boolean afterOutput, String reason) {
    static Expect ok() {
      return new Expect(true, 200, null, null, false, null);
    }

    static Expect error(int status, String type, String message, String reason) {
      return new Expect(false, status, type, message, false, reason);
    }

    /** A decode failure after output: terminal event for streaming clients, an ordinary error otherwise. */
    static Expect afterOutput(int status, String message, String reason) {
      return new Expect(false, status, "decode", message, true, reason);
    }
  }

  record Case(String name, String leg, JsonObject rule, boolean chat, Expect expect) {
    @Override
    public String toString() {
      return leg + " " + name;
    }
  }

  static Case prefill(String name, JsonObject rule, Expect expect) {
    return new Case(name, "prefill", rule.put("phase", "prefill"), false, expect);
  }

  static Case decode(String name, JsonObject rule, Expect expect) {
    return new Case(name, "decode", rule.put("phase", "decode"), false, expect);
  }

  static Case chatDecode(String name, JsonObject rule, Expect expect) {
    return new Case(name, "decode", rule.put("phase", "decode"), true, expect);
  }

  static JsonObject rule(String kind) {
    return new JsonObject().put("kind", kind).put("count", 1);
  }

  static List<Case> cases() {
    List<Case> c = new ArrayList<>();
    // status: timeout-shaped (408, 504) → 504; other 5xx and 429 → 502; other 4xx → passed through.
    for (String leg : List.of("prefill", "decode")) {
      c.add(leg(leg, "status 500", rule("status").put("status", 500),
          Expect.error(502, leg, "engine answered HTTP 500: Internal server error", "engine_error_status")));
      c.add(leg(leg, "status 502", rule("status").put("status", 502),
          Expect.error(502, leg, "engine answered HTTP 502: Bad Gateway", "engine_error_status")));
      c.add(leg(leg, "status 503", rule("status").put("status", 503),
          Expect.error(502, leg, "engine answered HTTP 503: Service Unavailable", "engine_overloaded")));
      c.add(leg(leg, "status 429", rule("status").put("status", 429),
          Expect.error(502, leg, "engine answered HTTP 429: Too Many Requests", "engine_overloaded")));
      c.add(leg(leg, "status 408", rule("status").put("status", 408),
          Expect.error(504, leg, "engine answered HTTP 408: Request Timeout", "engine_timeout_status")));
      c.add(leg(leg, "status 504", rule("status").put("status", 504),
          Expect.error(504, leg, "engine answered HTTP 504: Gateway Timeout", "engine_timeout_status")));
      c.add(leg(leg, "status 400 (context too long)", rule("status").put("status", 400)
              .put("message", "This model's maximum context length is 4096 tokens."),
          Expect.error(400, "BadRequestError", "This model's maximum context length is 4096 tokens.", "engine_rejected")));
      c.add(leg(leg, "status 422", rule("status").put("status", 422).put("message", "temperature must be >= 0"),
          Expect.error(422, "UnprocessableEntityError", "temperature must be >= 0", "engine_rejected")));
      c.add(leg(leg, "queue_full", rule("queue_full"),
          Expect.error(502, leg, "engine answered HTTP 503: Request queue full.", "engine_overloaded")));
      c.add(leg(leg, "reset before headers", rule("reset"),
          Expect.error(502, leg, "engine connection failed before a complete response", "connection_reset")));
    }

    // prefill leg: the producer's answer is one non-streamed JSON body.
    c.add(prefill("reset mid-body", rule("reset").put("after", 1),
        Expect.error(502, "prefill", "engine connection failed before a complete response", "connection_reset")));
    c.add(prefill("hang_before_headers", rule("hang_before_headers"),
        Expect.error(504, "prefill", "prefill did not complete within 1s", "prefill_timeout")));
    c.add(prefill("hang_after_headers", rule("hang_after_headers"),
        Expect.error(504, "prefill", "prefill did not complete within 1s", "prefill_timeout")));
    c.add(prefill("silence_after (never completes)", rule("silence_after").put("after", 1),
        Expect.error(504, "prefill", "prefill did not complete within 1s", "prefill_timeout")));
    c.add(prefill("metadata_then_output (a delay)", rule("metadata_then_output").put("frames", 2).put("interval_ms", 50),
        Expect.ok()));
    c.add(prefill("slow_tokens (one token)", rule("slow_tokens").put("itl_ms", 100), Expect.ok()));
    c.add(prefill("done_before_output (200 without handoff)", rule("done_before_output"),
        Expect.error(502, "prefill", "invalid handoff descriptor: missing descriptor", "invalid_descriptor")));
    c.add(prefill("close_before_done (body cut)", rule("close_before_done").put("after", 1),
        Expect.error(502, "prefill", "engine connection failed before a complete response", "connection_reset")));
    c.add(prefill("error_in_stream (an HTTP error there)", rule("error_in_stream").put("code", 503),
        Expect.error(502, "prefill", "engine answered HTTP 503: Service Unavailable", "engine_overloaded")));
    c.add(prefill("descriptor_missing", rule("descriptor_missing"),
        Expect.error(502, "prefill", "invalid handoff descriptor: missing descriptor", "invalid_descriptor")));
    c.add(prefill("descriptor_no_engine_id", rule("descriptor_no_engine_id"),
        Expect.error(502, "prefill", "invalid handoff descriptor: missing engine identity", "invalid_descriptor")));
    c.add(prefill("descriptor_bad_block_ids", rule("descriptor_bad_block_ids").put("variant", "floats"),
        Expect.error(502, "prefill", "invalid handoff descriptor: malformed block ids", "invalid_descriptor")));
    c.add(prefill("descriptor_foreign_connector", rule("descriptor_foreign_connector").put("variant", "sglang"),
        Expect.error(502, "prefill", "invalid handoff descriptor: connector mismatch: descriptor carries bootstrap_room, which NIXL does not use",
            "invalid_descriptor")));
    c.add(prefill("descriptor_wrong_side_channel", rule("descriptor_wrong_side_channel"),
        Expect.error(502, "prefill", "invalid handoff descriptor: endpoint mismatch: the descriptor's side channel is not the producer's attested KV side channel",
            "invalid_descriptor")));
    c.add(prefill("lease_expiry (consumer recomputes)", rule("lease_expiry"), Expect.ok()));

    // decode leg: the consumer's SSE stream.
    c.add(decode("reset after 2 tokens", rule("reset").put("after", 2),
        Expect.afterOutput(502, "stream ended before the [DONE] terminator", "eof_before_done")));
    c.add(decode("hang_before_headers", rule("hang_before_headers"),
        Expect.error(504, "decode", "no first token within 0.5s: no frames at all", "first_token_timeout")));
    c.add(decode("hang_after_headers", rule("hang_after_headers"),
        Expect.error(504, "decode", "no first token within 0.5s: no frames at all", "first_token_timeout")));
    c.add(decode("metadata_then_output", rule("metadata_then_output").put("frames", 3).put("interval_ms", 50), Expect.ok()));
    c.add(chatDecode("metadata_then_output (chat)", rule("metadata_then_output").put("frames", 3).put("interval_ms", 50), Expect.ok()));
    c.add(decode("metadata only until the first-token budget", rule("metadata_then_output").put("frames", 1).put("interval_ms", 30_000),
        Expect.error(504, "decode", "no first token within 0.5s: 1 metadata frame(s) but no token", "first_token_timeout")));
    c.add(chatDecode("role frame only until the first-token budget (chat)",
        rule("metadata_then_output").put("frames", 1).put("interval_ms", 30_000),
        Expect.error(504, "decode", "no first token within 0.5s: 1 metadata frame(s) but no token", "first_token_timeout")));
    c.add(decode("done_before_output", rule("done_before_output"),
        Expect.error(502, "decode", "stream ended with [DONE] before any token arrived", "done_before_output")));
    c.add(chatDecode("done_before_output after a role frame (chat)", rule("done_before_output"),
        Expect.error(502, "decode", "stream ended with [DONE] before any token arrived", "done_before_output")));
    c.add(decode("close_before_done before output", rule("close_before_done").put("after", 0),
        Expect.error(502, "decode", "stream ended before the [DONE] terminator", "eof_before_done")));
    c.add(decode("close_before_done after 2 tokens", rule("close_before_done").put("after", 2),
        Expect.afterOutput(502, "stream ended before the [DONE] terminator", "eof_before_done")));
    c.add(chatDecode("close_before_done after 2 tokens (chat)", rule("close_before_done").put("after", 2),
        Expect.afterOutput(502, "stream ended before the [DONE] terminator", "eof_before_done")));
    c.add(decode("silence_after 0 tokens", rule("silence_after").put("after", 0),
        Expect.error(504, "decode", "no first token within 0.5s: no frames at all", "first_token_timeout")));
    c.add(decode("silence_after 2 tokens", rule("silence_after").put("after", 2),
        Expect.afterOutput(504, "engine went silent between tokens: nothing arrived within the 0.5s read timeout",
            "decode_read_timeout")));
    c.add(decode("error_in_stream before output", rule("error_in_stream").put("after", 0).put("code", 503)
            .put("type", "overloaded_error").put("message", "the engine is draining"),
        Expect.error(503, "overloaded_error", "the engine is draining", "stream_error")));
    c.add(decode("error_in_stream before output, 4xx", rule("error_in_stream").put("after", 0).put("code", 400)
            .put("type", "BadRequestError").put("message", "prompt too long for this engine"),
        Expect.error(400, "BadRequestError", "prompt too long for this engine", "stream_error")));
    c.add(decode("error_in_stream before output, code not an error status", rule("error_in_stream").put("after", 0)
            .put("code", 200).put("type", "weird_error").put("message", "something odd"),
        Expect.error(500, "weird_error", "something odd", "stream_error")));
    c.add(decode("error_in_stream after 2 tokens", rule("error_in_stream").put("after", 2).put("code", 503)
            .put("type", "overloaded_error").put("message", "the engine is draining"),
        Expect.afterOutput(503, "the engine is draining", "stream_error")));
    c.add(decode("kv_transfer_fail (error object, policy fail)", rule("kv_transfer_fail"),
        Expect.error(500, "InternalServerError", "Internal server error", "stream_error")));
    c.add(decode("slow_tokens", rule("slow_tokens").put("itl_ms", 100), Expect.ok()));
    return c;
  }

  static Case leg(String leg, String name, JsonObject rule, Expect expect) {
    return leg.equals("prefill") ? prefill(name, rule, expect) : decode(name, rule, expect);
  }

  static Stream<Arguments> matrix() {
    List<Arguments> out = new ArrayList<>();
    for (Case c : cases()) {
      out.add(Arguments.of(c, false));
      out.add(Arguments.of(c, true));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0}, stream={1}")
  @MethodSource("matrix")
  void faultEndsWithTheContractOutcome(Case c, boolean stream) {
    SimEngine target = h.engine(c.leg().equals("prefill") ? "P0" : "D0");
    target.faults().add(c.rule().copy());
    String path = c.chat() ? "/v1/chat/completions" : "/v1/completions";
    RouterHarness.Reply reply = FailureChecks.post(h, path, c.chat() ? chat(stream) : completion(stream));
    assertTrue(target.faults().list().isEmpty(), "the injected fault was consumed by the " + c.leg() + " leg: " + target.faults().list());
    verify(c.expect(), c.leg(), stream, c.chat(), reply);
    if (c.name().startsWith("lease_expiry")) {
      JsonObject decode = h.engine("D0").requests().get(0);
      assertEquals("recomputed", decode.getString("kv"), "the consumer recomputed the expired handoff: " + decode);
      assertTrue(h.engine("D0").stats().getLong("kv_recomputed") > 0, h.engine("D0").stats().encode());
    }
  }

  /** refuse: the leg in flight is dropped (connection failure), then the engine refuses connections. */
  @ParameterizedTest(name = "refuse on {0}")
  @ValueSource(strings = {"prefill", "decode"})
  void refuseDropsTheLegThenRefusesConnections(String leg) {
    SimEngine target = h.engine(leg.equals("prefill") ? "P0" : "D0");
    try {
      target.faults().add(rule("refuse").put("phase", leg));
      RouterHarness.Reply first = FailureChecks.post(h, "/v1/completions", completion(false));
      verify(Expect.error(502, leg, "engine connection failed before a complete response", "connection_reset"), leg, false, false, first);
      // A pooled keep-alive connection the engine closed may fail first (a reset, as in production); a fresh
      // connection is refused.
      RouterHarness.Reply refused = FailureChecks.post(h, "/v1/completions", completion(true));
      for (int i = 0; i < 5 && refused.body().contains("engine connection failed before a complete response"); i++) {
        refused = FailureChecks.post(h, "/v1/completions", completion(true));
      }
      verify(Expect.error(502, leg, "could not connect to the engine", "connect_error"), leg, true, false, refused);
    } finally {
      RouterHarness.await(target.resumeListening());
    }
    RouterHarness.Reply again = FailureChecks.post(h, "/v1/completions", completion(false));
    assertEquals(200, again.status(), again.body());
  }

  /** health_503 is engine state, not a leg fault: requests still complete while /health answers 503. */
  @Test
  void health503DoesNotFailRequests() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "health_503"));
    RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", completion(true));
    verify(Expect.ok(), "decode", true, false, reply);
  }

  // ---- the checks every case makes

  static void verify(Expect expect, String leg, boolean stream, boolean chat, RouterHarness.Reply reply) {
    assertNotNull(reply.requestId(), "x-request-id on every response");
    String text = chat ? expectedChatText : expectedText;
    JsonObject row;
    if (expect.succeeds()) {
      assertEquals(200, reply.status(), reply.body());
      if (stream) {
        List<String> events = reply.events();
        assertEquals("[DONE]", events.get(events.size() - 1), reply.body());
        assertEquals(text, reply.streamedText());
      } else {
        JsonObject choice = reply.json().getJsonArray("choices").getJsonObject(0);
        assertEquals(text, chat ? choice.getJsonObject("message").getString("content") : choice.getString("text"));
      }
      row = rowFor(h, reply.requestId());
      assertEquals("completed", row.getString("terminal"), row.encode());
      assertEquals(200, row.getInteger("status"));
      assertTrue(row.getJsonArray("attempt_failures").isEmpty(), row.encode());
      allReleased(h);
      return;
    }
    boolean committed = stream && expect.afterOutput();
    if (committed) {
      assertEquals(200, reply.status(), "the 200 was committed with the first output: " + reply.body());
      assertTrue(reply.contentType().startsWith("text/event-stream"), reply.contentType());
      List<String> events = reply.events();
      assertFalse(events.contains("[DONE]"), "no [DONE] after a failure: " + reply.body());
      assertTrue(events.size() >= 2, "output, then the terminal event: " + reply.body());
      assertTrue(reply.streamedText().length() > 0 && text.startsWith(reply.streamedText()),
          "the output before the failure was relayed: " + reply.body());
      JsonObject terminal = new JsonObject(events.get(events.size() - 1));
      JsonObject error = terminal.getJsonObject("error");
      assertNotNull(error, "last event is the terminal error: " + reply.body());
      assertEquals(expect.message(), error.getString("message"));
      assertEquals("decode", error.getString("type"));
      assertEquals(expect.status(), error.getInteger("code"));
      for (int i = 0; i < events.size() - 1; i++) {
        assertNull(new JsonObject(events.get(i)).getValue("error"), "one terminal error event only: " + reply.body());
      }
      namesNoEngine(h, reply.body());
    } else {
      assertEquals(expect.status(), reply.status(), reply.body());
      assertTrue(reply.contentType().startsWith("application/json"), reply.contentType());
      JsonObject error = reply.error();
      assertEquals(expect.message(), error.getString("message"), error.encode());
      assertEquals(expect.type(), error.getString("type"), error.encode());
      assertEquals(expect.status(), error.getInteger("code"), error.encode());
      namesNoEngine(h, reply.body());
    }
    row = rowFor(h, reply.requestId());
    assertEquals("failed", row.getString("terminal"), row.encode());
    assertEquals(expect.status(), row.getInteger("status"), row.encode());
    assertEquals(expect.reason(), row.getString("reason"), row.encode());
    assertEquals(committed ? "decode" : expect.type(), row.getString("error_type"), row.encode());
    assertEquals(1, row.getInteger("attempts"), row.encode());
    JsonArray failures = row.getJsonArray("attempt_failures");
    assertEquals(1, failures.size(), row.encode());
    JsonObject failure = failures.getJsonObject(0);
    assertEquals(expect.reason(), failure.getString("reason"), row.encode());
    assertEquals(leg, failure.getString("phase"), row.encode());
    assertEquals("P0", failure.getString("prefill_iid"), row.encode());
    assertEquals(expect.status(), failure.getInteger("status"), row.encode());
    assertEquals(committed, failure.getBoolean("output_started"), row.encode());
    assertEquals(committed ? "output_started" : "attempt_limit", failure.getString("retry_reason"), row.encode());
    assertNotNull(failure.getString("error_message"));
    if (committed) assertTrue(row.getLong("output_len") > 0, row.encode());
    allReleased(h);
  }
}
