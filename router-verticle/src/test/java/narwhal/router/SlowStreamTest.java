package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * After the first token, any chunk resets the read timeout: metadata frames every 0.6 × decode_read_timeout_s keep
 * a slow stream alive although tokens come slower than the timeout; the same stream without them is silence.
 */
@Timeout(60)
class SlowStreamTest {

  @Test
  void metadataKeepsASlowStreamAliveAndSilenceEndsIt() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("engine", json.getJsonObject("engine").put("decode_read_timeout_s", 0.5)))) {
      JsonObject body = DisaggregatedExecutionTest.completion(true).put("max_tokens", 4);
      h.engine("D0").faults().add(new JsonObject().put("kind", "slow_tokens").put("itl_ms", 800).put("keepalive_ms", 300)
          .put("phase", "decode"));
      RouterHarness.Reply alive = h.post("/v1/completions", body);
      assertEquals(200, alive.status());
      List<String> events = alive.events();
      assertEquals("[DONE]", events.get(events.size() - 1), "the slow stream completed: " + alive.body());
      assertTrue(events.stream().anyMatch(e -> !e.equals("[DONE]") && RouterHarness.outputText(new JsonObject(e)).isEmpty()),
          "metadata frames were relayed");

      h.engine("D0").faults().add(new JsonObject().put("kind", "slow_tokens").put("itl_ms", 800).put("phase", "decode"));
      RouterHarness.Reply silent = h.post("/v1/completions", body);
      assertEquals(200, silent.status(), "committed with the first token");
      List<String> cut = silent.events();
      assertFalse(cut.contains("[DONE]"));
      JsonObject error = new JsonObject(cut.get(cut.size() - 1)).getJsonObject("error");
      assertEquals("engine went silent between tokens: nothing arrived within the 0.5s read timeout", error.getString("message"));
      assertEquals(504, error.getInteger("code"));
      assertEquals("decode", error.getString("type"));
      assertEquals(0, h.reservations());
    }
  }
}
