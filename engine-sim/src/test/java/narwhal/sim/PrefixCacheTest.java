package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** vLLM's automatic prefix caching: full prompt blocks keyed by chained hashes, shared, evicted least recently used. */
@ExtendWith(VertxExtension.class)
class PrefixCacheTest {

  /** {@code n} distinct words starting with {@code tag}: a prompt of exactly n tokens. */
  static String words(String tag, int n) {
    return IntStream.range(0, n).mapToObj(i -> tag + i).collect(Collectors.joining(" "));
  }

  private static JsonObject last(SimEngine engine) {
    List<JsonObject> log = engine.requests();
    return log.get(log.size() - 1);
  }

  private static Object cachedTokens(SimClient.Reply r) {
    JsonObject details = r.json().getJsonObject("usage").getJsonObject("prompt_tokens_details");
    return details == null ? null : details.getValue("cached_tokens");
  }

  @Test
  void secondRequestWithTheSameLongPromptReportsCachedTokensAndAShorterTimeToFirstToken(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setTtftPerPromptTokenMs(0.5)
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    JsonObject body = SimClient.completion(words("sys", 200)).put("max_tokens", 4);

    SimClient.Reply first = http.post(engine, "/v1/completions", body);
    assertEquals(200, first.status, first.text);
    assertTrue(first.json().getJsonObject("usage").containsKey("prompt_tokens_details"));
    assertNull(cachedTokens(first), "vLLM leaves prompt_tokens_details null when nothing was cached");
    double firstTtft = last(engine).getDouble("sim_ttft_ms");
    assertEquals(0, last(engine).getInteger("cached_tokens"));

    SimClient.Reply second = http.post(engine, "/v1/completions", body);
    assertEquals(200, second.status, second.text);
    assertEquals(192, cachedTokens(second), "12 full blocks of 16: the last prompt token is always computed");
    double secondTtft = last(engine).getDouble("sim_ttft_ms");
    assertEquals(200 * 0.5, firstTtft, 1e-9);
    assertEquals(8 * 0.5, secondTtft, 1e-9);
    assertTrue(secondTtft < firstTtft);
    assertEquals(first.json().getJsonArray("choices"), second.json().getJsonArray("choices"), "the cache changes time, not text");

    String metrics = http.get(engine, "/metrics").text;
    String labels = "{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"}";
    assertTrue(metrics.contains("vllm:prefix_cache_queries_total" + labels + " 400.0"), metrics);
    assertTrue(metrics.contains("vllm:prefix_cache_hits_total" + labels + " 192.0"), metrics);
    JsonObject stats = http.get(engine, "/sim/stats").json();
    assertEquals(0.48, stats.getDouble("prefix_cache_hit_rate"), 1e-9);
    assertEquals(400, stats.getInteger("prefix_cache_queries"));
    assertEquals(192, stats.getInteger("prefix_cache_hits"));
    assertEquals(0, stats.getInteger("blocks_in_use"), "cached blocks no request holds are free");
    assertEquals(12, stats.getInteger("blocks_cached"));
  }

  @Test
  void aSharedPrefixHitsUpToWhereThePromptsDiffer(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    String system = words("sys", 40);
    http.post(engine, "/v1/completions", SimClient.completion(system + " " + words("alice", 30)));
    SimClient.Reply other = http.post(engine, "/v1/completions", SimClient.completion(system + " " + words("bob", 30)));
    assertEquals(32, cachedTokens(other), "two full blocks of the 40-token system prompt; the third block differs");
    SimClient.Reply changed = http.post(engine, "/v1/completions", SimClient.completion("x " + system));
    assertNull(cachedTokens(changed), "a hash chains its parent's: a different first block misses everything after it");
  }

  @Test
  void noPrefixCachingComputesEveryPrompt(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setPrefixCaching(false)
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    JsonObject body = SimClient.completion(words("sys", 100));
    http.post(engine, "/v1/completions", body);
    SimClient.Reply again = http.post(engine, "/v1/completions", body);
    assertNull(cachedTokens(again));
    JsonObject stats = engine.stats();
    assertEquals(0, stats.getInteger("prefix_cache_queries"));
    assertEquals(0, stats.getInteger("blocks_cached"));
  }

  @Test
  void cachedTokensAreReportedOnlyWithEnablePromptTokensDetails(Vertx vertx) {
    SimEngine plain = SimEngine.start(vertx, new SimEngineOptions().setName("plain")).await();
    SimEngine detailed = SimEngine.start(vertx, new SimEngineOptions().setName("detailed").setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    JsonObject stream = SimClient.chat(words("sys", 50)).put("stream", true)
      .put("stream_options", new JsonObject().put("include_usage", true));
    for (SimEngine engine : List.of(plain, detailed)) {
      http.post(engine, "/v1/chat/completions", stream);
    }
    JsonObject plainUsage = usageFrame(http.post(plain, "/v1/chat/completions", stream));
    assertFalse(plainUsage.containsKey("prompt_tokens_details"), plainUsage.encode());
    assertEquals(48, plain.stats().getInteger("prefix_cache_hits"), "the cache works either way; only the report differs");
    JsonObject detailedUsage = usageFrame(http.post(detailed, "/v1/chat/completions", stream));
    assertEquals(48, detailedUsage.getJsonObject("prompt_tokens_details").getInteger("cached_tokens"), detailedUsage.encode());
  }

  private static JsonObject usageFrame(SimClient.Reply r) {
    List<JsonObject> frames = r.jsonFrames();
    JsonObject usage = frames.get(frames.size() - 1);
    assertTrue(usage.getJsonArray("choices").isEmpty(), usage.encode());
    return usage.getJsonObject("usage");
  }

  @Test
  void poolPressureEvictsTheLeastRecentlyUsedBlocks(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setBlockSize(4).setTotalBlocks(8)
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    // 8 prompt tokens and 4 output tokens: 3 blocks each, 2 of them full prompt blocks that join the cache.
    JsonObject a = SimClient.completion(words("a", 8)).put("max_tokens", 4);
    http.post(engine, "/v1/completions", a);
    assertEquals(4, cachedTokens(http.post(engine, "/v1/completions", a)), "A is cached");
    for (String other : List.of("b", "c", "d", "e")) {
      assertEquals(200, http.post(engine, "/v1/completions", SimClient.completion(words(other, 8)).put("max_tokens", 4)).status);
    }
    assertTrue(engine.stats().getInteger("blocks_cached") <= 8);
    assertEquals(4, cachedTokens(http.post(engine, "/v1/completions", SimClient.completion(words("d", 8)).put("max_tokens", 4))),
      "a recent prompt is still cached");
    assertNull(cachedTokens(http.post(engine, "/v1/completions", a)), "the oldest prompt was evicted to make room");
    assertEquals(0, engine.stats().getInteger("blocks_in_use"));
  }

  @Test
  void heldBlocksAreSharedByConcurrentRequestsAndFreedOnce(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setItlMs(5).setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    String prompt = words("sys", 64);
    http.post(engine, "/v1/completions", SimClient.completion(prompt).put("max_tokens", 1));
    JsonObject longer = SimClient.completion(prompt).put("max_tokens", 30).put("ignore_eos", true).put("stream", true);
    var one = http.postAsync(engine, "/v1/completions", longer);
    var two = http.postAsync(engine, "/v1/completions", longer);
    assertTrue(http.eventually(() -> engine.stats().getInteger("running") == 2), engine.stats().encode());
    assertEquals(3 + 2 * 3, engine.stats().getInteger("blocks_in_use"), "3 shared prefix blocks, 3 own blocks each");
    assertEquals(200, one.await().status);
    assertEquals(200, two.await().status);
    assertTrue(http.eventually(() -> engine.stats().getInteger("blocks_in_use") == 0), engine.stats().encode());
    assertEquals(4, engine.stats().getInteger("blocks_cached"));
  }

  @Test
  void aRequestWaitingBehindAnotherWithTheSamePrefixHitsWhatThatOneIsScheduledToCompute(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setTtftPerPromptTokenMs(1)
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    var busy = http.postAsync(engine, "/v1/completions", SimClient.completion(words("other", 300)).put("max_tokens", 1));
    assertTrue(http.eventually(() -> engine.stats().getInteger("running") == 1), engine.stats().encode());
    JsonObject body = SimClient.completion(words("sys", 200)).put("max_tokens", 1);
    var first = http.postAsync(engine, "/v1/completions", body);
    var second = http.postAsync(engine, "/v1/completions", body);
    assertTrue(http.eventually(() -> engine.stats().getInteger("waiting") == 2), engine.stats().encode());
    assertEquals(300, engine.stats().getInteger("prefix_cache_queries"), "vLLM looks a prefix up when it schedules the request: the two waiting ones not yet");

    assertEquals(200, busy.await().status);
    assertNull(cachedTokens(first.await()));
    assertEquals(192, cachedTokens(second.await()),
      "both arrived with nothing cached; the second was scheduled after the first had its blocks cached");
    JsonObject stats = engine.stats();
    assertEquals(300 + 200 + 200, stats.getInteger("prefix_cache_queries"));
    assertEquals(192, stats.getInteger("prefix_cache_hits"));
    assertTrue(http.eventually(() -> engine.stats().getInteger("blocks_in_use") == 0), engine.stats().encode());
  }

  @Test
  void aChunkedPrefillCachesOnlyTheBlocksOfTheChunksScheduledSoFar(Vertx vertx) {
    SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setMaxNumBatchedTokens(64).setTtftPerPromptTokenMs(50)
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    JsonObject body = SimClient.completion(words("sys", 200)).put("max_tokens", 1);
    SimClient.Reply abandoned = http.postWithIdleTimeout(engine, "/v1/completions", body, 300);
    assertTrue(abandoned.failure != null, "the client gave up during the first chunk (64 tokens, 3.2 s): " + abandoned.status);
    assertTrue(http.eventually(() -> engine.stats().getInteger("blocks_in_use") == 0), engine.stats().encode());
    assertEquals(4, engine.stats().getInteger("blocks_cached"),
      "vLLM caches the blocks of the tokens scheduled so far (num_computed_tokens + num_new_tokens), not the whole prompt");

    engine.config().setTtftPerPromptTokenMs(0);
    assertEquals(64, cachedTokens(http.post(engine, "/v1/completions", body)), "only the first chunk's 4 blocks were computed");
  }
}
