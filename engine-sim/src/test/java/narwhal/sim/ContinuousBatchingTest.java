package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Continuous batching: at most max_num_seqs run, the rest wait in order; a step gives every running sequence a
 * token and costs more the fuller the batch; prefill is chunked at max_num_batched_tokens. Times are the
 * simulated ones the engine logs per request (sim_ttft_ms, sim_decode_ms), never the wall clock.
 */
@ExtendWith(VertxExtension.class)
class ContinuousBatchingTest {

  private static int gauge(SimClient http, SimEngine engine, String name) {
    Matcher m = Pattern.compile(Pattern.quote(name) + "\\{[^}]*} (\\d+)\\.0").matcher(http.get(engine, "/metrics").text);
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  private static JsonObject logged(SimEngine engine, String requestId) {
    return engine.requests().stream().filter(e -> requestId.equals(e.getString("request_id"))).findFirst().orElseThrow();
  }

  private static Future<SimClient.Reply> post(SimClient http, SimEngine engine, JsonObject body, String requestId) {
    return http.callAsync(engine.port(), HttpMethod.POST, "/v1/completions", body.toBuffer(), SimClient.DEFAULT_IDLE_TIMEOUT_MS,
      "x-request-id", requestId);
  }

  @Test
  void requestsBeyondMaxNumSeqsWaitInOrderAndShowInNumRequestsWaiting(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setMaxNumSeqs(1).setItlMs(10)).await();
    SimEngine reference = SimEngine.start(vertx, new SimEngineOptions().setName("ref")).await();
    SimClient http = new SimClient(vertx);
    List<Future<SimClient.Reply>> inflight = new ArrayList<>();
    // four streams and the metrics reads: the test client's pool holds five connections
    for (int i = 0; i < 4; i++) {
      inflight.add(post(http, engine, SimClient.completion("request " + i).put("max_tokens", 20).put("ignore_eos", true)
        .put("stream", true), "r" + i));
    }
    assertTrue(http.eventually(() -> gauge(http, engine, "vllm:num_requests_waiting") == 3
      && gauge(http, engine, "vllm:num_requests_running") == 1), http.get(engine, "/metrics").text);
    for (int i = 0; i < 4; i++) {
      SimClient.Reply r = inflight.get(i).await();
      assertEquals(200, r.status);
      assertTrue(r.endsWithDone());
      JsonObject same = SimClient.completion("request " + i).put("max_tokens", 20).put("ignore_eos", true).put("stream", true);
      assertEquals(http.post(reference, "/v1/completions", same).streamedText(), r.streamedText());
    }
    assertEquals(0, gauge(http, engine, "vllm:num_requests_waiting"));
    assertEquals(0, gauge(http, engine, "vllm:num_requests_running"));
    double last = 0;
    for (int i = 0; i < 4; i++) {
      last = Math.max(last, logged(engine, "r" + i).getDouble("sim_ttft_ms"));
    }
    assertTrue(last >= 2 * 20 * 10, "the last to arrive waited for the others' 20 steps of 10 ms: " + last);
  }

  @Test
  void decodeIsSlowerWithAFullerBatchAndStepsAreShared(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setItlMs(2).setItlPerRunningMs(4)).await();
    SimClient http = new SimClient(vertx);
    JsonObject body = SimClient.completion("alone in the batch").put("max_tokens", 10).put("ignore_eos", true);
    assertEquals(200, post(http, engine, body, "alone").await().status);
    double alone = logged(engine, "alone").getDouble("sim_decode_ms");
    assertEquals(9 * (2 + 4 * 1), alone, 1e-9, "nine decode steps of one sequence");
    long stepsBefore = engine.stats().getLong("engine_steps");

    List<Future<SimClient.Reply>> inflight = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      inflight.add(post(http, engine, SimClient.completion("batched request " + i).put("max_tokens", 10).put("ignore_eos", true),
        "b" + i));
    }
    double slowest = 0;
    double sum = 0;
    for (int i = 0; i < 6; i++) {
      assertEquals(200, inflight.get(i).await().status);
      double decode = logged(engine, "b" + i).getDouble("sim_decode_ms");
      slowest = Math.max(slowest, decode);
      sum += decode;
    }
    assertTrue(slowest > alone, "a fuller batch decodes slower: " + slowest + " vs " + alone);
    assertTrue(sum / 6 > alone, "on average too: " + sum / 6 + " vs " + alone);
    long steps = engine.stats().getLong("engine_steps") - stepsBefore;
    assertTrue(steps < 6 * 10, "one step serves every running sequence: " + steps + " steps for 60 tokens");
  }

  @Test
  void aSequenceThatEndsDuringAStepDoesNotStartASecondRoundOfSteps(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setItlMs(20)).await();
    SimClient http = new SimClient(vertx);
    // short ones end (and leave the batch) inside a step's completion while the long one still runs: each used to
    // start another chain of timed steps beside the running one, and the long one then decoded several times faster
    // than its own simulated time (under the router's load, 300 tokens of 20 ms steps in 0.67 s)
    List<Future<SimClient.Reply>> shorts = new ArrayList<>();
    Future<SimClient.Reply> longOne = post(http, engine, SimClient.completion("the long one").put("max_tokens", 40).put("ignore_eos", true), "long");
    for (int i = 0; i < 3; i++) {
      shorts.add(post(http, engine, SimClient.completion("short " + i).put("max_tokens", 2 + 2 * i).put("ignore_eos", true), "s" + i));
    }
    assertEquals(200, longOne.await().status);
    shorts.forEach(f -> assertEquals(200, f.await().status));
    JsonObject stats = engine.stats();
    assertEquals(0, stats.getLong("overlapping_steps"), "steps are waited for on a real timer, one at a time: " + stats.encode());
    assertEquals(40, stats.getLong("engine_steps"), "40 steps for the long one (its prefill step samples its first token) carry the short ones too");
  }

  @Test
  void aLongPromptIsPrefilledInChunksOfMaxNumBatchedTokens(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setMaxNumBatchedTokens(64).setTtftPerPromptTokenMs(0.1)).await();
    SimClient http = new SimClient(vertx);
    assertEquals(200, post(http, engine, SimClient.completion(PrefixCacheTest.words("w", 200)).put("max_tokens", 2), "long")
      .await().status);
    JsonObject entry = logged(engine, "long");
    assertEquals(4, entry.getInteger("prefill_steps"), "64 + 64 + 64 + 8 tokens");
    assertEquals(200 * 0.1, entry.getDouble("sim_ttft_ms"), 1e-9);
  }

  @Test
  void aSlowedDownEngineTakesTheFactorTimesLongerPerStepUntilRestored(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setTtftPerPromptTokenMs(0.1).setPrefixCaching(false)).await();
    SimClient http = new SimClient(vertx);
    String prompt = PrefixCacheTest.words("w", 100);
    assertEquals(200, post(http, engine, SimClient.completion(prompt).put("max_tokens", 1), "before").await().status);
    assertEquals(200, http.post(engine, "/sim/slowdown", new JsonObject().put("factor", 5)).status);
    assertEquals(200, post(http, engine, SimClient.completion(prompt).put("max_tokens", 1), "slowed").await().status);
    assertEquals(400, http.post(engine, "/sim/slowdown", new JsonObject().put("factor", 0.5)).status);
    assertEquals(400, http.post(engine, "/sim/slowdown", new JsonObject().put("speed", 2)).status);
    assertEquals(200, http.post(engine, "/sim/slowdown", new JsonObject().put("factor", 1)).status);
    assertEquals(200, post(http, engine, SimClient.completion(prompt).put("max_tokens", 1), "restored").await().status);
    assertEquals(100 * 0.1, logged(engine, "before").getDouble("sim_ttft_ms"), 1e-9);
    assertEquals(5 * 100 * 0.1, logged(engine, "slowed").getDouble("sim_ttft_ms"), 1e-9);
    assertEquals(100 * 0.1, logged(engine, "restored").getDouble("sim_ttft_ms"), 1e-9);
  }

  @Test
  void metricsCarryVllmHistogramsThatCountEveryRequest(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions()).await();
    SimClient http = new SimClient(vertx);
    for (int i = 0; i < 3; i++) {
      http.post(engine, "/v1/completions", SimClient.completion("count me " + i));
    }
    String text = http.get(engine, "/metrics").text;
    String labels = "engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"";
    for (String name : List.of("vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds")) {
      assertTrue(text.contains("# TYPE " + name + " histogram\n"), name);
      assertTrue(text.contains(name + "_count{" + labels + "} 3.0"), text);
      assertTrue(text.contains(name + "_bucket{" + labels + ",le=\"+Inf\"} 3.0"), text);
    }
    assertTrue(text.contains("vllm:time_to_first_token_seconds_bucket{" + labels + ",le=\"0.001\"}"));
    assertTrue(text.contains("vllm:e2e_request_latency_seconds_bucket{" + labels + ",le=\"7680.0\"} 3.0"));
  }
}
