package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A named latency profile reproduces the single-request figures of the measurement it was fitted to. */
@ExtendWith(VertxExtension.class)
class LatencyProfileTest {

  @Test
  void qwenOnL4ReproducesItsSourcesTimeToFirstTokenAndInterTokenLatency(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setLatencyProfile("qwen2.5-0.5b-l4")).await();
    SimEngineOptions o = engine.options();
    assertEquals(5.0, o.getItlMs());
    assertEquals(0.064, o.getItlPerRunningMs());
    assertEquals(0.086, o.getTtftPerPromptTokenMs());
    SimClient http = new SimClient(vertx);
    JsonObject body = SimClient.completion(PrefixCacheTest.words("in", 256)).put("max_tokens", 32).put("ignore_eos", true);
    SimClient.Reply r = http.call(engine.port(), HttpMethod.POST, "/v1/completions", body.toBuffer(), SimClient.DEFAULT_IDLE_TIMEOUT_MS,
      "x-request-id", "one");
    assertEquals(200, r.status);
    JsonObject entry = engine.requests().get(0);
    assertEquals(27.0, entry.getDouble("sim_ttft_ms"), 0.2, "the source's TTFT p50 at concurrency 1: 27.0 ms");
    assertEquals(5.1, entry.getDouble("sim_decode_ms") / 31, 0.05, "its ITL p50 at concurrency 1: 5.1 ms");
  }

  @Test
  void explicitTermsWinOverTheProfileAndUnknownNamesAreRefused(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setLatencyProfile("qwen2.5-0.5b-l4").setItlMs(1)).await();
    assertEquals(1.0, engine.options().getItlMs());
    assertEquals(0.086, engine.options().getTtftPerPromptTokenMs());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
      () -> new SimEngineOptions().setLatencyProfile("h100-fast").validate());
    assertTrue(e.getMessage().contains("latencyProfile=h100-fast") && e.getMessage().contains("qwen2.5-0.5b-l4"), e.getMessage());
    assertEquals("", new SimEngineOptions().getLatencyProfile(), "the zero model stays the default");
  }
}
