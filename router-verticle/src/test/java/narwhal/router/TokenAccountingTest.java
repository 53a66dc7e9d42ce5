package narwhal.router;

import io.micrometer.core.instrument.Timer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Token accounting (docs/metrics.md): the decode leg always asks the engine for usage, a streaming client that did
 * not ask gets the stream it would have had without it (compared byte for byte with the engine's own answer to the
 * request without {@code stream_options}, the engines on a fixed clock), and the tokens, the journal row and the
 * per-model histograms follow the engine's usage. Tracing is off here: no engine leg carries a {@code traceparent}.
 */
@Timeout(120)
class TokenAccountingTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { }, Map.of(),
        Clock.fixed(Instant.parse("2026-03-01T12:00:00Z"), ZoneOffset.UTC));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  static JsonObject chat(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("stream", stream).put("max_tokens", 6)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "count the narwhals")));
  }

  static JsonObject decodeEntry(String rid) {
    return h.engine("D0").requests().stream().filter(e -> (rid + "-a1-decode").equals(e.getString("request_id")))
        .findFirst().orElseThrow();
  }

  /** What D0 answers, itself, to the decode body the router sent with {@code edit} applied, under the client's request id. */
  static String engineAnswer(String rid, java.util.function.Consumer<JsonObject> edit) {
    JsonObject body = decodeEntry(rid).getJsonObject("body").copy();
    body.remove("kv_transfer_params");
    edit.accept(body);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/chat/completions", body, Map.of("x-request-id", rid));
    assertEquals(200, direct.status(), direct.body());
    return direct.body();
  }

  @Test
  void aStreamingClientThatDidNotAskGetsExactlyTheStreamWithoutTheUsageChunk() {
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat(true));
    assertEquals(200, reply.status(), reply.body());
    JsonObject sent = decodeEntry(reply.requestId()).getJsonObject("body");
    assertEquals(new JsonObject().put("include_usage", true), sent.getJsonObject("stream_options"), "the leg asks for usage");

    String withUsage = engineAnswer(reply.requestId(), body -> { });
    assertTrue(withUsage.contains("\"choices\":[],\"usage\":{"), "the engine does send a usage chunk: " + withUsage);
    String without = engineAnswer(reply.requestId(), body -> body.remove("stream_options"));
    assertFalse(without.contains("\"usage\""), without);
    assertEquals(without, reply.body(), "byte for byte the engine's stream without stream_options");
  }

  @Test
  void aStreamingClientThatAskedGetsTheUsageChunkAsTheEngineSentIt() {
    JsonObject asked = chat(true).put("stream_options", new JsonObject().put("include_usage", true));
    RouterHarness.Reply reply = h.post("/v1/chat/completions", asked);
    assertEquals(200, reply.status(), reply.body());
    assertEquals(new JsonObject().put("include_usage", true),
        decodeEntry(reply.requestId()).getJsonObject("body").getJsonObject("stream_options"));
    assertEquals(engineAnswer(reply.requestId(), body -> { }), reply.body());

    JsonObject declined = chat(true).put("stream_options", new JsonObject().put("include_usage", false));
    RouterHarness.Reply quiet = h.post("/v1/chat/completions", declined);
    assertEquals(200, quiet.status(), quiet.body());
    assertEquals(engineAnswer(quiet.requestId(), body -> body.put("stream_options", new JsonObject().put("include_usage", false))),
        quiet.body(), "include_usage false: no usage chunk, nothing else changed");
  }

  /** vLLM reads {@code include_usage: null} as not asked: the engine sends no usage chunk, nor does the router. */
  @Test
  void includeUsageNullIsNotAskedYetTheTokensAreCounted() throws Exception {
    JsonObject nullUsage = chat(true).put("stream_options", new JsonObject().putNull("include_usage"));
    RouterHarness.Reply reply = h.post("/v1/chat/completions", nullUsage);
    assertEquals(200, reply.status(), reply.body());
    assertEquals(new JsonObject().put("include_usage", true),
        decodeEntry(reply.requestId()).getJsonObject("body").getJsonObject("stream_options"), "the leg still asks for usage");
    String engineOwn = engineAnswer(reply.requestId(), body -> body.put("stream_options", new JsonObject().putNull("include_usage")));
    assertFalse(engineOwn.contains("\"usage\":{"), "the engine itself sends no usage chunk for null: " + engineOwn);
    assertEquals(engineOwn, reply.body(), "the client gets the engine's own stream for include_usage null");
    assertEquals(6, h.journalRow(reply.requestId()).getInteger("completion_tokens"), "the tokens are still counted");
  }

  @Test
  void tokensAreCountedPerModelAndKindAndJournalled() throws Exception {
    double prompt = tokens("prompt");
    double completion = tokens("completion");
    double cached = tokens("cached");
    RouterHarness.Reply streamed = h.post("/v1/chat/completions", chat(true));
    RouterHarness.Reply whole = h.post("/v1/chat/completions", chat(false));
    assertEquals(200, streamed.status());
    assertEquals(200, whole.status());
    JsonObject usage = whole.json().getJsonObject("usage");
    JsonObject a = h.journalRow(streamed.requestId());
    JsonObject b = h.journalRow(whole.requestId());
    assertEquals(usage.getInteger("prompt_tokens"), b.getInteger("prompt_tokens"));
    assertEquals(usage.getInteger("completion_tokens"), b.getInteger("completion_tokens"));
    assertEquals(6, a.getInteger("completion_tokens"), a.encode());
    assertEquals(a.getInteger("prompt_tokens"), b.getInteger("prompt_tokens"), "the same prompt");
    assertNull(a.getValue("cached_tokens"), "the engine reported no cached tokens");
    assertNull(a.getValue("trace_id"), "tracing off: no trace id");
    assertNull(decodeEntry(streamed.requestId()).getValue("traceparent"), "tracing off: no traceparent to the engines");
    assertEquals(prompt + a.getInteger("prompt_tokens") + b.getInteger("prompt_tokens"), tokens("prompt"));
    assertEquals(completion + a.getInteger("completion_tokens") + b.getInteger("completion_tokens"), tokens("completion"));
    assertEquals(cached, tokens("cached"));
  }

  @Test
  void cachedPromptTokensAreCountedWhenTheEngineReportsThem() throws Exception {
    try (RouterHarness details = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json,
        (iid, o) -> o.setEnablePromptTokensDetails(true), Map.of())) {
      RouterHarness.Reply reply = details.post("/v1/chat/completions", chat(true));
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = details.journalRow(reply.requestId());
      int cached = row.getInteger("cached_tokens");
      assertTrue(cached > 0, "the consumer pulled the prompt's KV: " + row.encode());
      assertEquals(cached, details.registry.get("narwhal.tokens").tag("model", RouterHarness.MODEL).tag("kind", "cached")
          .counter().count());
      assertFalse(reply.body().contains("\"usage\""), "still no usage chunk for a client that did not ask");
    }
  }

  @Test
  void theProducersPrefixHitIsJournalledBesideTheDecodesCachedTokens() throws Exception {
    try (RouterHarness details = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json,
        (iid, o) -> o.setEnablePromptTokensDetails(true), Map.of())) {
      String system = java.util.stream.IntStream.range(0, 40).mapToObj(i -> "rule" + i).collect(java.util.stream.Collectors.joining(" "));
      JsonObject body = chat(false);
      body.getJsonArray("messages").add(0, new JsonObject().put("role", "system").put("content", system));
      RouterHarness.Reply first = details.post("/v1/chat/completions", body);
      RouterHarness.Reply second = details.post("/v1/chat/completions", body);
      assertEquals(200, first.status(), first.body());
      assertEquals(200, second.status(), second.body());
      JsonObject cold = details.journalRow(first.requestId());
      JsonObject warm = details.journalRow(second.requestId());
      assertNull(cold.getValue("prefill_cached_tokens"), "the producer computed the whole prompt: " + cold.encode());
      int hit = warm.getInteger("prefill_cached_tokens");
      assertEquals(0, hit % 16, "whole blocks: " + warm.encode());
      assertTrue(hit >= 32 && hit < warm.getInteger("prompt_tokens"), warm.encode());
      assertEquals(warm.getInteger("prompt_tokens") - 1, warm.getInteger("cached_tokens"),
          "the decode's usage counts every transferred token as cached: not what the prefix cache saved");
      assertEquals(hit, details.registry.get("narwhal.tokens").tag("model", RouterHarness.MODEL).tag("kind", "prefill_cached")
          .counter().count(), "narwhal_tokens_total{kind=\"prefill_cached\"} counts the producers' hits");
    }
  }

  @Test
  void eachHistogramRecordsWhatItNames() {
    long itl = timer("narwhal.inter.token.latency").count();
    long tpot = timer("narwhal.time.per.output.token").count();
    long e2e = timer("narwhal.e2e.latency").count();
    long prefill = timer("narwhal.prefill.leg.duration").count();
    long handoff = timer("narwhal.handoff.age").count();
    long ttft = timer("narwhal.decode.ttft").count();
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat(true));
    assertEquals(200, reply.status(), reply.body());
    long outputFrames = reply.events().stream().filter(e -> !e.equals("[DONE]"))
        .filter(e -> !RouterHarness.outputText(new JsonObject(e)).isEmpty()).count();
    assertEquals(6, outputFrames, reply.body());
    // the request's end is accounted right after its last bytes are written: the client may read them first
    FailureChecks.eventually(h, () -> timer("narwhal.e2e.latency").count() > e2e, () -> "the request's end accounted");
    assertEquals(itl + outputFrames - 1, timer("narwhal.inter.token.latency").count(), "one gap between each two outputs");
    assertEquals(tpot + 1, timer("narwhal.time.per.output.token").count());
    assertEquals(e2e + 1, timer("narwhal.e2e.latency").count());
    assertEquals(prefill + 1, timer("narwhal.prefill.leg.duration").count());
    assertEquals(handoff + 1, timer("narwhal.handoff.age").count());
    assertEquals(ttft + 1, timer("narwhal.decode.ttft").count());

    String text = h.get("/metrics").body();
    for (String family : List.of("narwhal_inter_token_latency_seconds", "narwhal_time_per_output_token_seconds",
        "narwhal_e2e_latency_seconds", "narwhal_prefill_leg_duration_seconds", "narwhal_handoff_age_seconds",
        "narwhal_decode_ttft_seconds")) {
      assertTrue(text.contains("# TYPE " + family + " histogram"), family);
      assertTrue(text.contains(family + "_bucket{model=\"" + RouterHarness.MODEL + "\",le="), family + " has buckets per model");
    }
    assertTrue(text.contains("narwhal_handoff_age_seconds_bucket{model=\"" + RouterHarness.MODEL + "\",le=\"1.0E-4\"}"),
        "the handoff age has sub-millisecond buckets");
  }

  static double tokens(String kind) {
    return h.registry.get("narwhal.tokens").tag("model", RouterHarness.MODEL).tag("kind", kind).counter().count();
  }

  static Timer timer(String name) {
    return h.registry.get(name).tag("model", RouterHarness.MODEL).timer();
  }
}
