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
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The context check's {@code /tokenize} is part of the prefill phase: a producer whose tokenizer never answers is bounded
 * by {@code serving.prefill_timeout_s} (1 s here; {@code engine.health_timeout_s} is far longer) and is a prefill
 * timeout of that producer, retried on another as one, 504 when no attempt is left; nothing stays reserved.
 */
@Timeout(120)
class TokenizeTimeoutTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"), json -> json
        .put("serving", new JsonObject().put("max_attempts", 2).put("prefill_timeout_s", 1).put("request_timeout_s", 60))
        .put("engine", new JsonObject().put("health_timeout_s", 30)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }

  /** A prompt whose size alone does not settle whether it fits: the router asks the producer's /tokenize. */
  private static JsonObject unsettled(int i) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", RouterHarness.words(2000) + " hang " + i)
        .put("max_tokens", 8);
  }

  private static JsonObject hangTokenize() {
    return new JsonObject().put("kind", "hang_before_headers").put("phase", "tokenize").put("count", 1);
  }

  @Test
  void aSilentTokenizeIsTheProducersPrefillTimeoutAndIsRetriedOnAnother() throws Exception {
    h.engine("P0").faults().add(hangTokenize());
    RouterHarness.Reply reply = null;
    for (int i = 0; i < 8 && !h.engine("P0").faults().list().isEmpty(); i++) {
      reply = FailureChecks.post(h, "/v1/completions", unsettled(i));
      assertEquals(200, reply.status(), reply.body());
    }
    assertTrue(h.engine("P0").faults().list().isEmpty(), "P0's tokenize was asked");
    JsonObject row = FailureChecks.rowFor(h, reply.requestId());
    assertEquals("completed", row.getString("terminal"), row.encode());
    assertEquals(2, row.getInteger("attempts"), row.encode());
    JsonObject failure = row.getJsonArray("attempt_failures").getJsonObject(0);
    assertEquals("prefill", failure.getString("phase"), row.encode());
    assertEquals("P0", failure.getString("prefill_iid"), row.encode());
    assertEquals("prefill_timeout", failure.getString("reason"), row.encode());
    assertEquals("allowed", failure.getString("retry_reason"), row.encode());
    assertTrue(failure.getString("error_message").contains("/tokenize"), row.encode());
    assertEquals("P1", row.getString("prefill_iid"), row.encode());
    FailureChecks.allReleased(h);
  }

  @Test
  void whenEveryProducersTokenizeIsSilentTheClientGetsThePrefillTimeout() throws Exception {
    h.engine("P0").faults().add(hangTokenize());
    h.engine("P1").faults().add(hangTokenize());
    RouterHarness.Reply reply = FailureChecks.post(h, "/v1/completions", unsettled(100));
    assertEquals(504, reply.status(), reply.body());
    assertEquals("prefill", reply.error().getString("type"), reply.body());
    JsonObject row = FailureChecks.rowFor(h, reply.requestId());
    assertEquals("failed", row.getString("terminal"), row.encode());
    assertEquals("prefill_timeout", row.getString("reason"), row.encode());
    JsonArray failures = row.getJsonArray("attempt_failures");
    assertEquals(2, failures.size(), row.encode());
    assertNotEquals(failures.getJsonObject(0).getString("prefill_iid"), failures.getJsonObject(1).getString("prefill_iid"));
    assertTrue(h.engine("P0").requests().stream().noneMatch(r -> String.valueOf(r.getValue("request_id")).endsWith("-prefill")
        && String.valueOf(r.getValue("request_id")).startsWith(reply.requestId())), "no prefill leg was sent");
    FailureChecks.allReleased(h);
  }
}
