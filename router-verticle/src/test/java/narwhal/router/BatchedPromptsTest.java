package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A completions request with several prompts, served as vLLM serves it (docs/vllm.md#batched-prompts): one prefill →
 * decode per prompt (a batched prefill's one descriptor would decode every later prompt against the first prompt's
 * KV), choices indexed by prompt, usage summed, streamed interleaved or assembled; one failing prompt fails the request.
 */
@Timeout(60)
class BatchedPromptsTest {
  static RouterHarness h;
  static final JsonArray TOKENS = new JsonArray().add(11).add(12).add(13).add(14);

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }

  private static JsonObject batch(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 6).put("ignore_eos", true).put("stream", stream)
        .put("prompt", new JsonArray().add("the narwhal swims north").add("copper wind over the harbor").add(TOKENS));
  }

  /** What the engine answers, itself, to prompt {@code i} of the batch alone. */
  private static JsonObject alone(JsonObject batch, int i) {
    JsonObject one = batch.copy().put("stream", false).put("prompt", batch.getJsonArray("prompt").getValue(i));
    one.remove("stream_options");
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", one);
    assertEquals(200, direct.status(), direct.body());
    return direct.json();
  }

  @Test
  void aBatchGetsOneChoicePerPromptEachItsOwnPrefillAndDecode() throws Exception {
    JsonObject body = batch(false);
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(200, reply.status(), reply.body());
    JsonArray choices = reply.json().getJsonArray("choices");
    assertEquals(3, choices.size(), reply.body());
    int prompt = 0;
    int completion = 0;
    for (int i = 0; i < 3; i++) {
      JsonObject own = alone(body, i);
      JsonObject expected = own.getJsonArray("choices").getJsonObject(0).copy().put("index", i);
      assertEquals(expected, choices.getJsonObject(i), "prompt " + i);
      prompt += own.getJsonObject("usage").getInteger("prompt_tokens");
      completion += own.getJsonObject("usage").getInteger("completion_tokens");
    }
    JsonObject usage = reply.json().getJsonObject("usage");
    assertEquals(prompt, usage.getInteger("prompt_tokens"));
    assertEquals(completion, usage.getInteger("completion_tokens"));
    assertEquals(prompt + completion, usage.getInteger("total_tokens"));
    assertEquals("cmpl-" + reply.requestId(), reply.json().getString("id"));
    String rid = reply.requestId();
    for (int i = 0; i < 3; i++) {
      String part = rid + "-" + i;
      assertTrue(h.engine("P0").requests().stream().anyMatch(r -> (part + "-a1-prefill").equals(r.getString("request_id"))), part);
      assertEquals("completed", h.journalRow(part).getString("terminal"));
    }
    assertEquals(0, h.reservations());
  }

  @Test
  void aStreamedBatchInterleavesIndexedChunksWithOneSummedUsageChunk() {
    JsonObject body = batch(true).put("stream_options", new JsonObject().put("include_usage", true));
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(200, reply.status(), reply.body());
    Map<Integer, StringBuilder> texts = new HashMap<>();
    JsonObject usage = null;
    List<String> events = reply.events();
    assertEquals("[DONE]", events.get(events.size() - 1));
    for (String e : events.subList(0, events.size() - 1)) {
      JsonObject chunk = new JsonObject(e);
      assertEquals("cmpl-" + reply.requestId(), chunk.getString("id"), e);
      if (chunk.getJsonArray("choices").isEmpty()) {
        assertEquals(null, usage, "one usage chunk");
        usage = chunk.getJsonObject("usage");
        continue;
      }
      JsonObject choice = chunk.getJsonArray("choices").getJsonObject(0);
      texts.computeIfAbsent(choice.getInteger("index"), k -> new StringBuilder()).append(choice.getString("text"));
    }
    int completion = 0;
    for (int i = 0; i < 3; i++) {
      JsonObject own = alone(body, i);
      assertEquals(own.getJsonArray("choices").getJsonObject(0).getString("text"), String.valueOf(texts.get(i)), "prompt " + i);
      completion += own.getJsonObject("usage").getInteger("completion_tokens");
    }
    assertEquals(completion, usage.getInteger("completion_tokens"), usage.encode());
    assertEquals(0, h.reservations());
  }

  @Test
  void onePromptThatCannotFitFailsTheBatchAsVllmDoes() throws Exception {
    JsonArray tooLong = new JsonArray();
    for (int i = 0; i < 4095; i++) tooLong.add(i);
    JsonObject body = batch(false).put("prompt", new JsonArray().add("a fine prompt").add(tooLong));
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(400, reply.status(), reply.body());
    assertEquals("input_tokens", reply.error().getString("param"), reply.body());
    assertEquals("invalid", h.journalRow(reply.requestId() + "-1").getString("terminal"));
    assertEquals(0, h.reservations());
  }

  /**
   * vLLM checks every prompt of a batch before any work and refuses the batch whole. A prompt that needs the
   * producer's {@code /tokenize} (text too long for the size bound) must not let the batch's other prompts prefill
   * meanwhile: abandoned after their prefill, their KV would stay held until the lease ends. Streamed or not, the
   * client gets vLLM's 400 as JSON, no prompt of the batch reaches a prefill, and nothing is left held.
   */
  @Test
  void aBatchWithOnePromptOverTheContextIsRefusedWholeBeforeAnyPrefill() throws Exception {
    String tooLong = RouterHarness.words(4093);
    JsonObject alone = batch(false).put("max_tokens", 4).put("prompt", tooLong);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", alone);
    assertEquals(400, direct.status(), direct.body());
    for (boolean stream : new boolean[] {false, true}) {
      int heldBefore = h.engine("P0").stats().getInteger("handoffs_held");
      int leftBefore = h.get("/narwhal/state").json().getInteger("handoffs_left");
      JsonObject body = batch(stream).put("max_tokens", 4)
          .put("prompt", new JsonArray().add("the narwhal swims north").add(TOKENS).add(tooLong).add("copper wind"));
      RouterHarness.Reply reply = h.post("/v1/completions", body);
      assertEquals(400, reply.status(), "stream " + stream + ": " + reply.body());
      assertTrue(reply.contentType().startsWith("application/json"), reply.contentType());
      assertEquals(direct.json(), reply.json(), "the router answers as the engine would");
      String rid = reply.requestId();
      assertTrue(h.engine("P0").requests().stream().noneMatch(r -> String.valueOf(r.getString("request_id")).startsWith(rid)
          && String.valueOf(r.getString("request_id")).endsWith("-prefill")), "no prefill leg for any prompt of the batch");
      assertEquals("context_length", h.journalRow(rid + "-2").getString("reason"));
      for (int i : new int[] {0, 1, 3}) {
        JsonObject row = h.journalRow(rid + "-" + i);
        assertEquals("batch_failed", row.getString("reason"), row.encode());
        assertEquals(0, row.getInteger("handoffs_left"), row.encode());
      }
      assertEquals(heldBefore, h.engine("P0").stats().getInteger("handoffs_held"), "no KV held for the batch");
      assertEquals(leftBefore, h.get("/narwhal/state").json().getInteger("handoffs_left"));
      assertEquals(0, h.reservations());
    }
  }

  /**
   * Token ids given as numeric strings or integral floats are ids (pydantic's lax integers): each prompt is sent to its
   * legs as integers, since a lone {@code ["11", "12"]} would be two text prompts to vLLM, a batched prefill again.
   */
  @Test
  void aBatchLargerThanTheConsumersRoomRunsInTurnsAndLeavesNoKvHeld() throws Exception {
    int parallelism = 2;
    try (RouterHarness small = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("batch_parallelism", parallelism)),
        (iid, o) -> {
          if ("D0".equals(iid)) o.setTotalBlocks(4);
        })) {
      JsonArray prompts = new JsonArray();
      for (int i = 0; i < 24; i++) prompts.add("prompt number " + i + " about the narwhal");
      JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 6).put("ignore_eos", true)
          .put("prompt", prompts);
      RouterHarness.Reply reply = small.post("/v1/completions", body);
      assertEquals(200, reply.status(), "24 prompts against a consumer with room for 4 at once: " + reply.body());
      assertEquals(24, reply.json().getJsonArray("choices").size());
      for (int i = 0; i < 24; i++) assertEquals(i, reply.json().getJsonArray("choices").getJsonObject(i).getInteger("index"));
      assertEquals(0, small.reservations());
      FailureChecks.eventually(small, () -> small.engine("P0").stats().getInteger("handoffs_held") == 0,
          () -> "no KV left held on the producer: " + small.engine("P0").stats().encode());
    }
  }

  /**
   * The deadline passing while prompts wait for a turn: each prompt ends once, with one journal row. A waiting prompt
   * whose own deadline timer fired first failed the batch, which failed its own wait for a turn, and it ended twice
   * (two rows, two outcomes counted, the batch's in-flight slot freed before its last prompt ended).
   */
  @Test
  void theDeadlinePassingWhilePromptsWaitEndsEachPromptOnce() throws Exception {
    int prompts = 200;
    try (RouterHarness small = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("batch_parallelism", 1).put("request_timeout_s", 0.5)))) {
      small.engine("D0").faults().add(new JsonObject().put("kind", "hang_before_headers").put("phase", "decode").put("count", 1));
      JsonArray list = new JsonArray();
      for (int i = 0; i < prompts; i++) list.add("prompt number " + i + " about the narwhal");
      RouterHarness.Reply reply = small.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL)
          .put("max_tokens", 6).put("prompt", list));
      assertEquals(504, reply.status(), reply.body());
      List<JsonObject> rows = small.journalRows(prompts);
      Map<String, Integer> perRid = new HashMap<>();
      for (JsonObject row : rows) perRid.merge(row.getString("rid"), 1, Integer::sum);
      assertEquals(prompts, perRid.size(), "one row per prompt");
      perRid.forEach((rid, n) -> assertEquals(1, n, rid + " ended " + n + " times"));
      FailureChecks.eventually(small, () -> small.reservations() == 0, () -> "reservations left: " + small.reservations());
      assertEquals(0, small.get("/narwhal/state").json().getInteger("in_flight"));
    }
  }

  /**
   * The client leaving while prompts wait for a turn: no waiting prompt sends a leg. Cancelling the running prompt
   * gave its turn to the next waiting one, which sent its prefill before it was cancelled in turn, and so on: every
   * waiting prompt of the batch sent a prefill after the client had gone.
   */
  @Test
  void theClientLeavingWhilePromptsWaitSendsNoWaitingPromptsLeg() throws Exception {
    int prompts = 20;
    try (RouterHarness small = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("batch_parallelism", 1)))) {
      small.engine("D0").faults().add(new JsonObject().put("kind", "slow_tokens").put("itl_ms", 200).put("phase", "decode").put("count", 1));
      JsonArray list = new JsonArray();
      for (int i = 0; i < prompts; i++) list.add("prompt number " + i + " about the narwhal");
      JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", 200).put("ignore_eos", true)
          .put("prompt", list);
      io.vertx.core.http.HttpClientRequest req = RouterHarness.await(small.http.request(io.vertx.core.http.HttpMethod.POST,
          small.router.actualPort(), "127.0.0.1", "/v1/completions"));
      req.putHeader("content-type", "application/json").send(body.toBuffer());
      FailureChecks.eventually(small, () -> small.engine("D0").stats().getLong("running") == 1,
          () -> "the first prompt decodes: " + small.engine("D0").stats());
      assertEquals(1, prefillAttempts(small), "one prompt runs at once");
      req.reset();
      List<JsonObject> rows = small.journalRows(prompts);
      assertEquals(prompts, rows.size());
      for (JsonObject row : rows) assertEquals("client_disconnected", row.getString("reason"), row.encode());
      assertEquals(1, prefillAttempts(small), "no prefill after the client left");
      FailureChecks.eventually(small, () -> small.reservations() == 0, () -> "reservations left: " + small.reservations());
    }
  }

  private static long prefillAttempts(RouterHarness h) {
    return h.get("/metrics").body().lines().filter(l -> l.startsWith("narwhal_prefill_attempts_total"))
        .mapToLong(l -> (long) Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  @Test
  void laxTokenIdsInABatchStayTokenIds() {
    JsonObject body = batch(false).put("prompt", new JsonArray().add(new JsonArray().add("11").add("12").add(13.0))
        .add(new JsonArray().add(14).add("15")));
    RouterHarness.Reply reply = h.post("/v1/completions", body);
    assertEquals(200, reply.status(), reply.body());
    JsonArray choices = reply.json().getJsonArray("choices");
    List<JsonArray> asInts = List.of(new JsonArray().add(11).add(12).add(13), new JsonArray().add(14).add(15));
    for (int i = 0; i < 2; i++) {
      JsonObject own = alone(body.copy().put("prompt", new JsonArray().add(asInts.get(0)).add(asInts.get(1))), i);
      assertEquals(own.getJsonArray("choices").getJsonObject(0).copy().put("index", i), choices.getJsonObject(i), "prompt " + i);
    }
    assertEquals(5, reply.json().getJsonObject("usage").getInteger("prompt_tokens"));
  }

  /** A batch with an empty prompt is refused at the edge, as a lone empty prompt is: no prompt of it runs a leg. */
  @Test
  void aBatchWithAnEmptyOrMixedPromptIsRefusedBeforeAnyLeg() {
    for (JsonArray prompts : List.of(new JsonArray().add("a fine prompt").add(""),
        new JsonArray().add(TOKENS).add(new JsonArray()), new JsonArray().add(new JsonArray().add(5).add("x")).add(TOKENS))) {
      RouterHarness.Reply reply = h.post("/v1/completions", batch(false).put("prompt", prompts));
      assertEquals(400, reply.status(), prompts.encode() + ": " + reply.body());
      assertEquals("prompt", reply.error().getString("param"), reply.body());
      String rid = reply.requestId();
      assertTrue(h.engine("P0").requests().stream().noneMatch(r -> String.valueOf(r.getString("request_id")).startsWith(rid)),
          "no leg for " + prompts.encode());
    }
    assertEquals(0, h.reservations());
  }

  @Test
  void severalChoicesStayRefused() {
    RouterHarness.Reply reply = h.post("/v1/completions", batch(false).put("n", 2));
    assertEquals(400, reply.status());
    assertEquals("n", reply.error().getString("param"));
  }
}
