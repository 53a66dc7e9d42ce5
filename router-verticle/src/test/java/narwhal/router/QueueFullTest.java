package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A decode engine whose KV pool cannot take the request answers vLLM's 503 "Request queue full." (the simulator's queue
 * limit, not an injected fault). docs/errors.md: the fault is {@code engine_overloaded}, transient, so retried before
 * the first byte on another consumer (and producer), counted against the engine's {@code overload} streak; when no
 * attempt is left the client gets 502 with the phase as its type.
 */
@Timeout(90)
class QueueFullTest {
  /** D0's pool holds one block of 16 tokens: a request of 7 prompt tokens and 12 output tokens needs two. */
  private static RouterHarness start(Set<String> full) throws Exception {
    return RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
            .put("serving", new JsonObject().put("max_attempts", 2).put("retry_base_s", 0.01).put("retry_cap_s", 0.02))
            .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)),
        (iid, options) -> {
          if (full.contains(iid)) options.setTotalBlocks(1);
        });
  }

  private static JsonObject streaks(RouterHarness h, String iid) {
    h.placementSettled();
    return h.get("/narwhal/state").json().getJsonArray("engines").stream().map(JsonObject.class::cast)
        .filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow().getJsonObject("streaks");
  }

  @Test
  void aFullDecodeQueueIsRetriedOnAnotherEngineAndCountsAsOverload() throws Exception {
    try (RouterHarness h = start(Set.of("D0"))) {
      int retried = 0;
      for (int i = 0; i < 4; i++) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(i % 2 == 1));
        JsonObject row = h.journalRow(reply.requestId());
        assertEquals(200, reply.status(), reply.body() + " " + row.encode());
        assertEquals("D1", row.getString("decode_iid"), "served by the consumer with room: " + row.encode());
        if (row.getInteger("attempts") == 1) continue;
        retried++;
        assertEquals(2, row.getInteger("attempts"), row.encode());
        JsonObject failure = row.getJsonArray("attempt_failures").getJsonObject(0);
        assertEquals("engine_overloaded", failure.getString("reason"), failure.encode());
        assertEquals("D0", failure.getString("decode_iid"));
        assertEquals(true, failure.getBoolean("transient"));
        assertEquals("allowed", failure.getString("retry_reason"));
        assertTrue(failure.getString("error_message").contains("Request queue full."), failure.encode());
        assertTrue(!row.getString("prefill_iid").equals(failure.getString("prefill_iid")), "a fresh prefill elsewhere: " + row.encode());
      }
      assertTrue(retried >= 1, "least_reserved sent some decodes to D0");
      JsonObject d0 = streaks(h, "D0");
      assertEquals(retried, d0.getInteger("overload"), "each full queue is overload evidence: " + d0.encode());
      for (String cls : d0.fieldNames()) if (!"overload".equals(cls)) assertEquals(0, d0.getInteger(cls), cls + ": " + d0.encode());
      assertEquals(0, h.reservations());
    }
  }

  @Test
  void whenEveryAttemptFindsTheQueueFullTheClientGets502() throws Exception {
    try (RouterHarness h = start(Set.of("D0", "D1"))) {
      for (boolean stream : List.of(false, true)) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(stream));
        assertEquals(502, reply.status(), reply.body());
        assertEquals("decode", reply.error().getString("type"), reply.body());
        assertEquals("engine answered HTTP 503: Request queue full.", reply.error().getString("message"));
        JsonObject row = h.journalRow(reply.requestId());
        assertEquals("engine_overloaded", row.getString("reason"), row.encode());
        assertEquals(2, row.getInteger("attempts"), row.encode());
        JsonArray failures = row.getJsonArray("attempt_failures");
        assertEquals("allowed", failures.getJsonObject(0).getString("retry_reason"), row.encode());
        assertEquals("attempt_limit", failures.getJsonObject(1).getString("retry_reason"), row.encode());
        assertTrue(!failures.getJsonObject(0).getString("decode_iid").equals(failures.getJsonObject(1).getString("decode_iid")),
            "each attempt on another consumer: " + row.encode());
      }
      for (String iid : List.of("D0", "D1")) {
        JsonObject s = streaks(h, iid);
        assertEquals(2, s.getInteger("overload"), iid + ": " + s.encode());
        for (String cls : s.fieldNames()) if (!"overload".equals(cls)) assertEquals(0, s.getInteger(cls), iid + " " + cls + ": " + s.encode());
      }
      assertEquals(0, h.reservations());
    }
  }
}
