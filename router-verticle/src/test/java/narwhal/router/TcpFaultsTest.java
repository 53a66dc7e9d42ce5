package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static narwhal.router.FailureChecks.allReleased;
import static narwhal.router.FailureChecks.namesNoEngine;
import static narwhal.router.FailureChecks.rowFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Engines that misbehave at the TCP level (engine-sim's connection faults, docs/simulator.md#connection-faults), through
 * a real router over two producers and two consumers with {@code serving.max_attempts: 2}: a connection accepted and
 * never read, response headers trickled a byte at a time, a storm of connections reset at accept. Each ends within
 * its bound ({@code serving.prefill_timeout_s} 1 s for a prefill, {@code engine.first_token_timeout_s} 0.5 s for a
 * decode: both run from before the request is sent, so bytes that trickle in do not extend them) as the fault kind
 * docs/errors.md gives it, is retried on the other engine (nothing reached the client), and leaves no reservation.
 *
 * <p>A connection fault acts on the next connection the engine accepts. Each test has its own router, so the
 * router holds no pooled connection to the faulty engine yet, and nothing else of the router connects to it while
 * the test runs (no load readings under {@code least_reserved}, liveness and model refreshes far apart).
 */
@Timeout(120)
class TcpFaultsTest {
  RouterHarness h;

  @BeforeEach
  void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("serving", new JsonObject().put("max_attempts", 2).put("prefill_timeout_s", 1))
        .put("engine", new JsonObject().put("first_token_timeout_s", 0.5).put("decode_read_timeout_s", 0.5))
        .put("placement", new JsonObject().put("policy", "least_reserved").put("models_refresh_s", 3600))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)
            .put("liveness_every", 100_000)));
  }

  @AfterEach
  void stop() throws Exception {
    h.close();
  }

  /** Sends {@code body} until {@code engine}'s connection fault has been consumed; returns the reply of that request. */
  RouterHarness.Reply sendUntilConsumed(SimEngine engine, JsonObject body) {
    for (int i = 0; i < 6; i++) {
      RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", body);
      if (engine.faults().list().isEmpty()) return reply;
      assertEquals(200, reply.status(), "a request that missed the faulty engine completes: " + reply.body());
    }
    throw new AssertionError(engine.name() + " accepted no connection; its fault is still pending");
  }

  List<String> requestIds(String iid) {
    return h.engine(iid).requests().stream().map(r -> r.getString("request_id")).filter(java.util.Objects::nonNull).toList();
  }

  /** The reply succeeded on a second attempt after one failure of {@code reason} on {@code iid}; returns that failure. */
  JsonObject retriedAfter(RouterHarness.Reply reply, boolean stream, String iid, String phase, String reason, int status, String message) {
    assertEquals(200, reply.status(), reply.body());
    String expected = FaultMatrixTest.expectedTextFor(h);
    if (stream) {
      assertEquals("[DONE]", reply.events().get(reply.events().size() - 1), reply.body());
      assertEquals(expected, reply.streamedText(), "the client sees only the retry's output");
    } else {
      assertEquals(expected, reply.json().getJsonArray("choices").getJsonObject(0).getString("text"));
    }
    JsonObject row = rowFor(h, reply.requestId());
    assertEquals("completed", row.getString("terminal"), row.encode());
    assertEquals(2, row.getInteger("attempts"), row.encode());
    JsonArray failures = row.getJsonArray("attempt_failures");
    assertEquals(1, failures.size(), row.encode());
    JsonObject f = failures.getJsonObject(0);
    assertEquals(phase, f.getString("phase"), row.encode());
    assertEquals(iid, f.getString(phase + "_iid"), row.encode());
    assertEquals(reason, f.getString("reason"), row.encode());
    assertEquals(status, f.getInteger("status"), row.encode());
    assertTrue(f.getString("error_message").startsWith(message), row.encode());
    assertEquals(true, f.getBoolean("transient"), row.encode());
    assertEquals(false, f.getBoolean("output_started"), row.encode());
    assertEquals("allowed", f.getString("retry_reason"), row.encode());
    assertFalse(iid.equals(row.getString(phase + "_iid")), "the retry ran on the other engine: " + row.encode());
    allReleased(h);
    return f;
  }

  @Test
  void producerThatNeverReadsEndsAtThePrefillTimeoutAndIsRetried() {
    h.engine("P0").faults().add(new JsonObject().put("kind", "accept_no_read"));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("P0"), FaultMatrixTest.completion(false));
    retriedAfter(reply, false, "P0", "prefill", "prefill_timeout", 504, "prefill did not complete within 1s");
    String rid = reply.requestId();
    assertFalse(requestIds("P0").contains(rid + "-a1-prefill"), "P0 never read the request: " + requestIds("P0"));
    assertTrue(requestIds("P1").contains(rid + "-a2-prefill"), () -> "" + requestIds("P1"));
  }

  @Test
  void producerTricklingItsHeadersEndsAtThePrefillTimeoutAndIsRetried() {
    // 200 ms a byte: the head of the answer would take some 30 s to arrive
    h.engine("P0").faults().add(new JsonObject().put("kind", "trickle_headers").put("interval_ms", 200));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("P0"), FaultMatrixTest.completion(false));
    retriedAfter(reply, false, "P0", "prefill", "prefill_timeout", 504, "prefill did not complete within 1s");
    assertTrue(requestIds("P0").contains(reply.requestId() + "-a1-prefill"), "P0 read it and answered, slowly: " + requestIds("P0"));
  }

  @Test
  void consumerTricklingItsHeadersEndsAtTheFirstTokenTimeoutAndIsRetried() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "trickle_headers").put("interval_ms", 200));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("D0"), FaultMatrixTest.completion(true));
    retriedAfter(reply, true, "D0", "decode", "first_token_timeout", 504, "no first token within 0.5s: no frames at all");
    assertTrue(requestIds("D0").contains(reply.requestId() + "-a1-decode"), () -> "" + requestIds("D0"));
  }

  @Test
  void consumerThatNeverReadsEndsAtTheFirstTokenTimeoutAndIsRetried() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "accept_no_read"));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("D0"), FaultMatrixTest.completion(true));
    retriedAfter(reply, true, "D0", "decode", "first_token_timeout", 504, "no first token within 0.5s: no frames at all");
    assertFalse(requestIds("D0").contains(reply.requestId() + "-a1-decode"), () -> "" + requestIds("D0"));
  }

  @Test
  void refusalStormResetsAreRetriedThenTheEngineServesAgain() {
    h.engine("P0").faults().add(new JsonObject().put("kind", "refuse_storm").put("count", 1));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("P0"), FaultMatrixTest.completion(false));
    retriedAfter(reply, false, "P0", "prefill", "connection_reset", 502, "engine connection failed before a complete response");
    assertFalse(requestIds("P0").contains(reply.requestId() + "-a1-prefill"), () -> "" + requestIds("P0"));

    boolean servedAgain = false;
    for (int i = 0; i < 4 && !servedAgain; i++) {
      RouterHarness.Reply later = FailureChecks.post(h, "/v1/completions", FaultMatrixTest.completion(false));
      assertEquals(200, later.status(), later.body());
      JsonObject row = rowFor(h, later.requestId());
      servedAgain = "P0".equals(row.getString("prefill_iid")) && row.getInteger("attempts") == 1;
    }
    assertTrue(servedAgain, "after the storm P0 accepts connections and serves again");
    allReleased(h);
  }

  @Test
  void consumerRefusalStormForAPeriodIsRetriedOnTheOtherConsumer() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "refuse_storm").put("seconds", 600).put("mode", "close"));
    int retried = 0;
    for (int i = 0; i < 4; i++) {
      RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", FaultMatrixTest.completion(true));
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = rowFor(h, reply.requestId());
      assertEquals("D1", row.getString("decode_iid"), "every decode that went to D0 moved to D1: " + row.encode());
      if (row.getInteger("attempts") == 2) {
        retriedAfter(reply, true, "D0", "decode", "connection_reset", 502, "engine connection failed before a complete response");
        retried++;
      }
    }
    assertTrue(retried >= 1, "D0 was tried and refused at least once");
    assertTrue(h.engine("D0").requests().isEmpty(), "no refused connection delivered a request: " + h.engine("D0").requests());
    assertEquals("refuse_storm", h.engine("D0").faults().list().get(0).kind(), "the storm lasts its period");
  }

  @Test
  void bothProducersNeverReadingFailTheRequestAfterTwoBoundedAttempts() {
    h.engine("P0").faults().add(new JsonObject().put("kind", "accept_no_read"));
    h.engine("P1").faults().add(new JsonObject().put("kind", "accept_no_read"));
    RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", FaultMatrixTest.completion(true));
    assertEquals(504, reply.status(), reply.body());
    JsonObject error = reply.error();
    assertEquals("prefill did not complete within 1s", error.getString("message"), error.encode());
    assertEquals("prefill", error.getString("type"), error.encode());
    namesNoEngine(h, reply.body());
    JsonObject row = rowFor(h, reply.requestId());
    assertEquals("failed", row.getString("terminal"), row.encode());
    assertEquals("prefill_timeout", row.getString("reason"), row.encode());
    assertEquals(2, row.getInteger("attempts"), row.encode());
    JsonArray failures = row.getJsonArray("attempt_failures");
    assertEquals(2, failures.size(), row.encode());
    assertEquals("allowed", failures.getJsonObject(0).getString("retry_reason"), row.encode());
    assertEquals("attempt_limit", failures.getJsonObject(1).getString("retry_reason"), row.encode());
    assertFalse(failures.getJsonObject(0).getString("prefill_iid").equals(failures.getJsonObject(1).getString("prefill_iid")), row.encode());
    assertTrue(h.engine("P0").faults().list().isEmpty() && h.engine("P1").faults().list().isEmpty(), "each producer got one attempt");
    allReleased(h);
  }
}
