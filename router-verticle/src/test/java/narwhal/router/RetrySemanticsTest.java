package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static narwhal.router.FailureChecks.allReleased;
import static narwhal.router.FailureChecks.rowFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Retries (docs/errors.md) with {@code serving.max_attempts: 2} over two producers and two consumers: a transient
 * fault before output is retried as a fresh attempt on other engines with {@code -a2-} backend ids; a
 * non-transient fault and a failure after output are not; each decision is journalled with its reason.
 *
 * <p>Which producer or consumer a request lands on is placement's business, so a fault is injected into one
 * engine and requests are sent until one of them consumed it (at most a few): that request is the one under test.
 */
@Timeout(120)
class RetrySemanticsTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("serving", new JsonObject().put("max_attempts", 2))
        .put("engine", new JsonObject().put("first_token_timeout_s", 0.5).put("decode_read_timeout_s", 0.5))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  /** Sends {@code body} until {@code engine}'s injected fault has been consumed; returns the reply of that request. */
  static RouterHarness.Reply sendUntilConsumed(SimEngine engine, JsonObject body) {
    for (int i = 0; i < 6; i++) {
      RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", body);
      if (engine.faults().list().isEmpty()) return reply;
      assertEquals(200, reply.status(), "a request that missed the faulty engine completes: " + reply.body());
    }
    throw new AssertionError(engine.name() + " never received a request; its fault is still pending");
  }

  static List<String> requestIds(String iid) {
    return h.engine(iid).requests().stream().map(r -> r.getString("request_id")).filter(java.util.Objects::nonNull).toList();
  }

  static String otherOf(String iid) {
    return switch (iid) {
      case "P0" -> "P1";
      case "P1" -> "P0";
      case "D0" -> "D1";
      default -> "D0";
    };
  }

  @Test
  void transientPrefillFaultIsRetriedOnTheOtherProducer() {
    h.engine("P0").faults().add(new JsonObject().put("kind", "status").put("status", 503).put("phase", "prefill").put("count", 1));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("P0"), FaultMatrixTest.completion(false));
    assertEquals(200, reply.status(), reply.body());
    String rid = reply.requestId();
    assertEquals(FaultMatrixTest.expectedTextFor(h), reply.json().getJsonArray("choices").getJsonObject(0).getString("text"));

    assertTrue(requestIds("P0").contains(rid + "-a1-prefill"), "attempt 1 on P0: " + requestIds("P0"));
    assertTrue(requestIds("P1").contains(rid + "-a2-prefill"), "attempt 2 is a fresh prefill on P1: " + requestIds("P1"));
    assertFalse(requestIds("P0").contains(rid + "-a2-prefill"), "the failed producer is excluded");
    JsonObject row = rowFor(h, rid);
    String consumer = row.getString("decode_iid");
    assertTrue(requestIds(consumer).contains(rid + "-a2-decode"), "the decode carries the attempt's ids: " + requestIds(consumer));
    assertFalse(requestIds(consumer).contains(rid + "-a1-decode"), "attempt 1 never reached decode");
    JsonObject decodeBody = h.engine(consumer).requests().stream().filter(r -> (rid + "-a2-decode").equals(r.getString("request_id")))
        .findFirst().orElseThrow().getJsonObject("body");
    assertEquals(h.engine("P1").engineId(), decodeBody.getJsonObject("kv_transfer_params").getString("remote_engine_id"),
        "the retry decodes the new producer's handoff");

    assertEquals("completed", row.getString("terminal"), row.encode());
    assertEquals(2, row.getInteger("attempts"), row.encode());
    assertEquals("P1", row.getString("prefill_iid"));
    JsonArray failures = row.getJsonArray("attempt_failures");
    assertEquals(1, failures.size(), row.encode());
    JsonObject f = failures.getJsonObject(0);
    assertEquals(1, f.getInteger("attempt"));
    assertEquals("prefill", f.getString("phase"));
    assertEquals("engine_overloaded", f.getString("reason"));
    assertEquals("P0", f.getString("prefill_iid"));
    assertNull(f.getValue("decode_iid"));
    assertEquals(502, f.getInteger("status"));
    assertEquals(true, f.getBoolean("transient"));
    assertEquals(false, f.getBoolean("output_started"));
    assertEquals("allowed", f.getString("retry_reason"));
    double backoff = f.getDouble("backoff_s");
    assertTrue(backoff >= 0 && backoff < 0.1, "full jitter within min(cap, base) = 0.1 s: " + backoff);
    assertEquals("engine answered HTTP 503: Service Unavailable", f.getString("error_message"));
    allReleased(h);
  }

  @Test
  void decodeFailureBeforeOutputExcludesThatConsumerAndProducer() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "close_before_done").put("after", 0).put("phase", "decode").put("count", 1));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("D0"), FaultMatrixTest.completion(true));
    assertEquals(200, reply.status(), reply.body());
    assertEquals("[DONE]", reply.events().get(reply.events().size() - 1));
    assertEquals(FaultMatrixTest.expectedTextFor(h), reply.streamedText(), "the client sees only the retry's output");
    String rid = reply.requestId();
    JsonObject row = rowFor(h, rid);
    assertEquals(2, row.getInteger("attempts"), row.encode());
    JsonObject f = row.getJsonArray("attempt_failures").getJsonObject(0);
    assertEquals("decode", f.getString("phase"));
    assertEquals("eof_before_done", f.getString("reason"));
    assertEquals("D0", f.getString("decode_iid"));
    assertEquals("allowed", f.getString("retry_reason"));
    assertEquals(false, f.getBoolean("output_started"));
    String failedProducer = f.getString("prefill_iid");
    assertEquals(otherOf(failedProducer), row.getString("prefill_iid"), "the failed attempt's producer is excluded: " + row.encode());
    assertEquals("D1", row.getString("decode_iid"), "the failed consumer is excluded: " + row.encode());
    assertTrue(requestIds(failedProducer).contains(rid + "-a1-prefill"));
    assertTrue(requestIds("D0").contains(rid + "-a1-decode"));
    assertTrue(requestIds(otherOf(failedProducer)).contains(rid + "-a2-prefill"));
    assertTrue(requestIds("D1").contains(rid + "-a2-decode"));
    allReleased(h);
  }

  @Test
  void nonTransientFaultIsNotRetried() {
    h.engine("P0").faults().add(new JsonObject().put("kind", "descriptor_bad_block_ids").put("variant", "strings")
        .put("phase", "prefill").put("count", 1));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("P0"), FaultMatrixTest.completion(false));
    assertEquals(502, reply.status(), reply.body());
    assertEquals("invalid handoff descriptor: malformed block ids", reply.error().getString("message"));
    JsonObject row = rowFor(h, reply.requestId());
    assertEquals("failed", row.getString("terminal"));
    assertEquals(1, row.getInteger("attempts"), row.encode());
    JsonObject f = row.getJsonArray("attempt_failures").getJsonObject(0);
    assertEquals("non_transient", f.getString("retry_reason"), row.encode());
    assertEquals(false, f.getBoolean("transient"));
    assertNull(f.getValue("backoff_s"));
    assertFalse(requestIds("P1").contains(reply.requestId() + "-a2-prefill"), "no second attempt");
    allReleased(h);
  }

  @Test
  void failureAfterOutputIsNotRetried() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "close_before_done").put("after", 2).put("phase", "decode").put("count", 1));
    RouterHarness.Reply reply = sendUntilConsumed(h.engine("D0"), FaultMatrixTest.completion(true));
    assertEquals(200, reply.status());
    List<String> events = reply.events();
    assertFalse(events.contains("[DONE]"), reply.body());
    JsonObject error = new JsonObject(events.get(events.size() - 1)).getJsonObject("error");
    assertEquals("stream ended before the [DONE] terminator", error.getString("message"));
    assertEquals(502, error.getInteger("code"));
    JsonObject row = rowFor(h, reply.requestId());
    assertEquals("failed", row.getString("terminal"));
    assertEquals(1, row.getInteger("attempts"), row.encode());
    JsonObject f = row.getJsonArray("attempt_failures").getJsonObject(0);
    assertEquals("output_started", f.getString("retry_reason"), row.encode());
    assertEquals(true, f.getBoolean("output_started"));
    assertEquals(false, f.getBoolean("transient"), "nothing after output is transient");
    assertTrue(requestIds("D1").stream().noneMatch(id -> id.startsWith(reply.requestId())), "no second decode");
    allReleased(h);
  }

  /**
   * A consumer answering 503 before any output (vLLM stopping: "server is shutting down" on an open connection) took no
   * work: the decode is tried on the other consumer even with {@code max_attempts} 1, and no client sees it.
   */
  @Test
  void aDecode503IsRetriedOnAnotherConsumerBeyondTheAttemptLimit() throws Exception {
    try (RouterHarness one = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("serving", new JsonObject().put("max_attempts", 1)))) {
      one.engine("D0").faults().add(new JsonObject().put("kind", "status").put("status", 503).put("phase", "decode")
          .put("message", "server is shutting down"));
      int retried = 0;
      for (int i = 0; i < 8; i++) {
        RouterHarness.Reply reply = FailureChecks.post(one, "/v1/completions", FaultMatrixTest.completion(i % 2 == 0));
        assertEquals(200, reply.status(), reply.body());
        JsonObject row = rowFor(one, reply.requestId());
        if (row.getInteger("attempts") == 2) {
          JsonObject f = row.getJsonArray("attempt_failures").getJsonObject(0);
          assertEquals("D0", f.getString("decode_iid"), row.encode());
          assertEquals("allowed", f.getString("retry_reason"), row.encode());
          assertEquals("D1", row.getString("decode_iid"), row.encode());
          retried++;
        }
      }
      assertTrue(retried > 0, "some decode was placed on D0 and retried");
      allReleased(one);
    }
  }

  /** A 429 is transient but not an engine stopping (503, refused, reset: those get attempts beyond the limit). */
  @Test
  void attemptLimitWithOneAttempt() throws Exception {
    try (RouterHarness one = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("serving", new JsonObject().put("max_attempts", 1)))) {
      for (String p : List.of("P0", "P1")) {
        one.engine(p).faults().add(new JsonObject().put("kind", "status").put("status", 429).put("phase", "prefill"));
      }
      RouterHarness.Reply reply = FailureChecks.post(one, "/v1/completions", FaultMatrixTest.completion(false));
      assertEquals(502, reply.status(), reply.body());
      JsonObject row = rowFor(one, reply.requestId());
      assertEquals(1, row.getInteger("attempts"));
      JsonObject f = row.getJsonArray("attempt_failures").getJsonObject(0);
      assertEquals("attempt_limit", f.getString("retry_reason"), row.encode());
      assertEquals(true, f.getBoolean("transient"), "transient, yet no attempt is left");
      allReleased(one);
    }
  }

  /**
   * Two requests fail at the same moment with one retry credit in the pool (and no replenishment): only one
   * retry may run; the other request ends with its fault and {@code shared_budget}, and the pool never goes
   * below zero. The router runs on two event loops and the two requests arrive on two connections, one per loop:
   * the pool is the replica's, not a loop's.
   */
  @Test
  void oneCreditPaysForOneRetryOnly() throws Exception {
    try (RouterHarness b = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("server", json.getJsonObject("server").put("event_loops", 2))
        .put("serving", new JsonObject().put("max_attempts", 2).put("retry_budget", 1).put("retry_replenish", 0)
            .put("retry_base_s", 0.3).put("retry_cap_s", 0.3))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000)))) {
      for (String p : List.of("P0", "P1")) {
        b.engine(p).faults().add(new JsonObject().put("kind", "status").put("status", 503).put("phase", "prefill").put("count", 1));
      }
      Future<RouterHarness.Reply> first = FailureChecks.postAsync(b, "/v1/completions", FaultMatrixTest.completion(false));
      Future<RouterHarness.Reply> second = FailureChecks.postAsync(b, "/v1/completions", FaultMatrixTest.completion(false));
      List<RouterHarness.Reply> replies = List.of(RouterHarness.await(first), RouterHarness.await(second));
      List<JsonObject> rows = replies.stream().map(r -> rowFor(b, r.requestId())).toList();
      for (JsonObject row : rows) {
        assertEquals("engine_overloaded", row.getJsonArray("attempt_failures").getJsonObject(0).getString("reason"),
            "precondition: both first attempts failed (on different producers): " + rows);
      }
      long retried = rows.stream().filter(r -> r.getInteger("attempts") == 2).count();
      assertEquals(1, retried, "one credit pays for one retry: " + rows);
      JsonObject denied = rows.stream().filter(r -> r.getInteger("attempts") == 1).findFirst().orElseThrow();
      assertEquals("failed", denied.getString("terminal"), denied.encode());
      assertEquals(502, denied.getInteger("status"));
      JsonObject f = denied.getJsonArray("attempt_failures").getJsonObject(0);
      assertEquals("shared_budget", f.getString("retry_reason"), denied.encode());
      assertNull(f.getValue("backoff_s"), denied.encode());
      JsonObject state = FailureChecks.get(b, "/narwhal/state").json();
      assertEquals(0.0, state.getDouble("retry_credits"), state.encode());
      assertTrue(FailureChecks.get(b, "/metrics").body().contains("narwhal_retry_denied_total 1.0"), "the denial is counted");
      assertNotNull(replies.get(0).requestId());
      assertNotEquals(replies.get(0).requestId(), replies.get(1).requestId());
      allReleased(b);
    }
  }
}
