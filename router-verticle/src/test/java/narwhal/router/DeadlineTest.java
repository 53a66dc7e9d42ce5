package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static narwhal.router.FailureChecks.allReleased;
import static narwhal.router.FailureChecks.rowFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The original request deadline ({@code serving.request_timeout_s}) when it is the tightest bound: a hung leg
 * whose own timeout is longer ends as {@code 504 request_expired} "original request deadline expired", journalled
 * {@code expired} — not as that leg's timeout with a made-up number of seconds — and with
 * {@code decode_read_timeout_s: 0} the deadline bounds a silent stream after output.
 */
@Timeout(60)
class DeadlineTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("serving", new JsonObject().put("request_timeout_s", 0.6).put("prefill_timeout_s", 30))
        .put("engine", new JsonObject().put("first_token_timeout_s", 30).put("decode_read_timeout_s", 0))
        .put("recovery", new JsonObject().put("eject_after", 1_000_000)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  private static void assertExpired(RouterHarness.Reply reply) {
    assertEquals(504, reply.status(), reply.body());
    assertEquals("request_expired", reply.error().getString("type"), reply.body());
    assertEquals("original request deadline expired", reply.error().getString("message"));
    JsonObject row = rowFor(h, reply.requestId());
    assertEquals("expired", row.getString("terminal"), row.encode());
    assertEquals(504, row.getInteger("status"));
    assertEquals("request_expired", row.getString("error_type"));
    assertTrue(row.getJsonArray("attempt_failures").isEmpty(), "the deadline is not an engine fault: " + row.encode());
    allReleased(h);
  }

  @RepeatedTest(3)
  void hungDecodeEndsAtTheDeadline() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "hang_after_headers").put("phase", "decode"));
    assertExpired(FailureChecks.post(h, "/v1/completions", FaultMatrixTest.completion(false)));
  }

  @RepeatedTest(3)
  void hungPrefillEndsAtTheDeadline() {
    h.engine("P0").faults().add(new JsonObject().put("kind", "hang_before_headers").put("phase", "prefill"));
    assertExpired(FailureChecks.post(h, "/v1/completions", FaultMatrixTest.completion(true)));
  }

  @Test
  void deadlineBoundsASilentStreamWhenTheReadTimeoutIsZero() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 2).put("phase", "decode"));
    RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", FaultMatrixTest.completion(true));
    assertEquals(200, reply.status(), reply.body());
    List<String> events = reply.events();
    assertFalse(events.contains("[DONE]"), reply.body());
    JsonObject error = new JsonObject(events.get(events.size() - 1)).getJsonObject("error");
    assertEquals("original request deadline expired", error.getString("message"), reply.body());
    assertEquals(504, error.getInteger("code"));
    JsonObject row = rowFor(h, reply.requestId());
    assertEquals("expired", row.getString("terminal"), row.encode());
    assertTrue(row.getLong("output_len") > 0);
    allReleased(h);
  }
}
