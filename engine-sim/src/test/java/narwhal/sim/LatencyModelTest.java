package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The latency model changes when tokens arrive, never what arrives; prefills queue behind each other. */
@ExtendWith(VertxExtension.class)
class LatencyModelTest {

  private static final Pattern WAITING = Pattern.compile("vllm:num_requests_waiting\\{[^}]*} (\\d+)\\.0");

  private static int waiting(SimClient http, SimEngine engine) {
    Matcher m = WAITING.matcher(http.get(engine, "/metrics").text);
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  @Test
  void queuedPrefillsAreReportedAsWaitingAndAllFinishWithTheSameText(Vertx vertx) {
    SimEngine slow = SimEngine.start(vertx, new SimEngineOptions().setName("slow")
      .setTtftBaseMs(400).setTtftPerPromptTokenMs(1).setItlMs(2).setItlPerRunningMs(1)).await();
    SimEngine fast = SimEngine.start(vertx, new SimEngineOptions().setName("fast")).await();
    SimClient http = new SimClient(vertx);

    List<Future<SimClient.Reply>> inflight = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      inflight.add(http.postAsync(slow, "/v1/chat/completions",
        SimClient.chat("concurrent request number " + i).put("stream", true).put("max_tokens", 8)));
    }
    assertTrue(http.eventually(() -> waiting(http, slow) >= 2), "queued prefills show up as waiting");

    for (int i = 0; i < 4; i++) {
      SimClient.Reply r = inflight.get(i).await();
      assertEquals(200, r.status);
      assertNull(r.failure);
      assertTrue(r.endsWithDone());
      JsonObject same = SimClient.chat("concurrent request number " + i).put("stream", true).put("max_tokens", 8);
      assertEquals(http.post(fast, "/v1/chat/completions", same).streamedText(), r.streamedText());
    }
    JsonObject stats = slow.stats();
    assertEquals(0, stats.getInteger("running"));
    assertEquals(0, stats.getInteger("waiting"));
    assertEquals(0, stats.getInteger("blocks_in_use"));
    assertEquals(0, waiting(http, slow));
  }
}
