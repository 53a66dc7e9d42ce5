package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Batches bounded and in linear cost (issue 40): at most {@code serving.max_batch_prompts} prompts or a 400 naming the
 * key; thousands of prompts answered, each choice at its prompt's index; at most {@code serving.max_legs_in_flight}
 * attempts of the replica at the engines at once, counted by the engines themselves ({@code peak_requests_in_progress}
 * of {@code /sim/stats}); a client leaving mid-batch, or while its whole batch still waits for turns, gives back every
 * turn and reservation; the bound lowered by a reload under load neither deadlocks nor leaks turns.
 */
@Timeout(120)
class BatchBoundsTest {

  private static JsonObject completions(JsonArray prompts, int maxTokens) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("max_tokens", maxTokens).put("ignore_eos", true)
        .put("prompt", prompts);
  }

  /** {@code n} prompts of one token each, a different token per prompt. */
  private static JsonArray oneTokenPrompts(int n) {
    JsonArray prompts = new JsonArray();
    for (int i = 0; i < n; i++) prompts.add(new JsonArray().add(i + 1));
    return prompts;
  }

  private static double metric(RouterHarness h, String series) {
    return h.get("/metrics").body().lines().filter(l -> l.startsWith(series + " ") || l.startsWith(series + "{"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  private static long peak(RouterHarness h, String iid) {
    return h.engine(iid).stats().getLong("peak_requests_in_progress");
  }

  @Test
  void aBatchOverTheBoundIsRefusedNamingTheKeyBeforeAnyLeg() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_batch_prompts", 3)))) {
      long before = h.engine("P0").stats().getLong("requests");
      RouterHarness.Reply refused = h.post("/v1/completions", completions(oneTokenPrompts(4), 1));
      assertEquals(400, refused.status(), refused.body());
      assertEquals("prompt", refused.error().getString("param"), refused.body());
      assertEquals("prompt: 4 prompts in one request, more than serving.max_batch_prompts (3)",
          refused.error().getString("message"));
      assertEquals("invalid", h.journalRow(refused.requestId()).getString("terminal"));
      assertEquals(before, h.engine("P0").stats().getLong("requests"), "no leg for a refused batch");

      RouterHarness.Reply atTheBound = h.post("/v1/completions", completions(oneTokenPrompts(3), 1));
      assertEquals(200, atTheBound.status(), atTheBound.body());
      assertEquals(3, atTheBound.json().getJsonArray("choices").size());
    }
  }

  @Test
  void fiveThousandPromptsAreAnsweredEachAtItsIndex() throws Exception {
    int n = 5_000;
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("batch_parallelism", 64).put("max_batch_prompts", n)))) {
      JsonObject body = completions(oneTokenPrompts(n), 1);
      RouterHarness.Reply reply = h.post("/v1/completions", body);
      assertEquals(200, reply.status(), reply.body().substring(0, Math.min(500, reply.body().length())));
      JsonArray choices = reply.json().getJsonArray("choices");
      assertEquals(n, choices.size());
      for (int i = 0; i < n; i++) assertEquals(i, choices.getJsonObject(i).getInteger("index"), "choice " + i);
      assertEquals(n, reply.json().getJsonObject("usage").getInteger("prompt_tokens"));
      assertEquals(n, reply.json().getJsonObject("usage").getInteger("completion_tokens"));
      for (int i = 0; i < n; i += 499) {
        JsonObject alone = completions(body.getJsonArray("prompt").getJsonArray(i), 1);
        RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", alone);
        assertEquals(200, direct.status(), direct.body());
        assertEquals(direct.json().getJsonArray("choices").getJsonObject(0).getString("text"),
            choices.getJsonObject(i).getString("text"), "prompt " + i + " answered at its own index");
      }
      FailureChecks.eventually(h, () -> h.reservations() == 0, () -> "reservations left: " + h.reservations());
      assertEquals(0, h.get("/narwhal/state").json().getInteger("in_flight"));
    }
  }

  /**
   * With {@code max_legs_in_flight} 2, a batch and single requests sent together never have more than 2 requests open
   * on an engine; raised by a hot reload, the next batch runs its 16 prompts' prefills at once (what the bound held).
   */
  @Test
  void theEnginesNeverSeeMoreThanTheLegBoundAcrossBatchesAndSingleRequests() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_legs_in_flight", 2)),
        (iid, o) -> o.setTtftBaseMs(20).setItlMs(5))) {
      long before = h.engine("P0").stats().getLong("requests");
      List<Future<RouterHarness.Reply>> replies = new ArrayList<>();
      replies.add(h.postAsync("/v1/completions", completions(oneTokenPrompts(40), 3)));
      for (int i = 0; i < 6; i++) replies.add(h.postAsync("/v1/completions", completions(new JsonArray().add(100 + i), 3)));
      for (Future<RouterHarness.Reply> f : replies) {
        RouterHarness.Reply reply = RouterHarness.await(f);
        assertEquals(200, reply.status(), reply.body());
      }
      assertTrue(peak(h, "P0") <= 2, "prefills open at once: " + h.engine("P0").stats());
      assertTrue(peak(h, "D0") <= 2, "decodes open at once: " + h.engine("D0").stats());
      assertEquals(before + 40 + 6, h.engine("P0").stats().getLong("requests"));
      assertEquals(0.0, metric(h, "narwhal_legs_in_flight"));
      assertEquals(0.0, metric(h, "narwhal_legs_waiting"));

      JsonObject raised = h.config.toJson();
      raised.getJsonObject("serving").put("max_legs_in_flight", 768);
      h.config = NarwhalConfig.fromJson(raised);
      RouterHarness.Reply reply = h.post("/v1/completions", completions(oneTokenPrompts(40), 3));
      assertEquals(200, reply.status(), reply.body());
      assertTrue(peak(h, "P0") > 2, "without the bound the batch's prefills overlap: " + h.engine("P0").stats());
    }
  }

  /**
   * The client leaves while its batch holds both turns and more prompts wait: every turn, reservation and the
   * in-flight slot come back, and the next requests get through.
   */
  @Test
  void aClientLeavingMidBatchGivesBackItsTurnsAndReservations() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_legs_in_flight", 2)),
        (iid, o) -> o.setItlMs(20))) {
      JsonObject body = completions(oneTokenPrompts(30), 500);
      HttpClientRequest req = RouterHarness.await(h.onContext(() -> h.http.request(HttpMethod.POST, h.router.actualPort(),
          "127.0.0.1", "/v1/completions")));
      req.putHeader("content-type", "application/json").send(body.toBuffer());
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_in_flight") == 2 && metric(h, "narwhal_legs_waiting") > 0,
          () -> "the batch holds both turns, more prompts wait: " + h.get("/metrics").body().lines()
              .filter(l -> l.startsWith("narwhal_legs")).toList());
      req.reset();
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_in_flight") == 0 && metric(h, "narwhal_legs_waiting") == 0,
          () -> "turns given back: " + h.get("/metrics").body().lines().filter(l -> l.startsWith("narwhal_legs")).toList());
      FailureChecks.eventually(h, () -> h.reservations() == 0, () -> "reservations left: " + h.reservations());
      FailureChecks.eventually(h, () -> h.get("/narwhal/state").json().getInteger("in_flight") == 0,
          () -> "in flight: " + h.get("/narwhal/state").body());
      for (int i = 0; i < 3; i++) {
        RouterHarness.Reply next = h.post("/v1/completions", completions(new JsonArray().add(7 + i), 2));
        assertEquals(200, next.status(), next.body());
      }
    }
  }
  /** Sends {@code body} to {@code /v1/completions} and returns the request, so that the test can reset it (the client leaves). */
  private static HttpClientRequest send(RouterHarness h, JsonObject body) {
    HttpClientRequest req = RouterHarness.await(h.onContext(() -> h.http.request(HttpMethod.POST, h.router.actualPort(),
        "127.0.0.1", "/v1/completions")));
    req.putHeader("content-type", "application/json").send(body.toBuffer());
    return req;
  }

  private static List<String> legLines(RouterHarness h) {
    return h.get("/metrics").body().lines().filter(l -> l.startsWith("narwhal_legs")).toList();
  }

  /**
   * Two requests hold both turns; a batch's prompts all wait behind them when its client leaves: no prompt of it is
   * ever sent to an engine, no turn stays taken once the holders leave too, and the next requests get through.
   */
  @Test
  void aBatchLeftWhileWaitingForTurnsTakesNoTurnAndSendsNoLeg() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_legs_in_flight", 2)),
        (iid, o) -> o.setItlMs(20))) {
      long before = h.engine("P0").stats().getLong("requests");
      List<HttpClientRequest> holders = List.of(send(h, completions(new JsonArray().add(5), 2_000)),
          send(h, completions(new JsonArray().add(6), 2_000)));
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_in_flight") == 2, () -> "both turns held: " + legLines(h));
      HttpClientRequest batch = send(h, completions(oneTokenPrompts(30), 1));
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_waiting") > 0, () -> "the batch waits: " + legLines(h));
      batch.reset();
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_waiting") == 0,
          () -> "the left batch's prompts no longer wait: " + legLines(h));
      assertEquals(2.0, metric(h, "narwhal_legs_in_flight"), "only the holders run: " + legLines(h));
      assertEquals(before + 2, h.engine("P0").stats().getLong("requests"), "no prompt of the left batch reached an engine");

      holders.forEach(HttpClientRequest::reset);
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_in_flight") == 0, () -> "turns given back: " + legLines(h));
      FailureChecks.eventually(h, () -> h.reservations() == 0, () -> "reservations left: " + h.reservations());
      FailureChecks.eventually(h, () -> h.get("/narwhal/state").json().getInteger("in_flight") == 0,
          () -> "in flight: " + h.get("/narwhal/state").body());
      List<Future<RouterHarness.Reply>> next = new ArrayList<>();
      for (int i = 0; i < 3; i++) next.add(h.postAsync("/v1/completions", completions(new JsonArray().add(7 + i), 2)));
      for (Future<RouterHarness.Reply> f : next) {
        RouterHarness.Reply reply = RouterHarness.await(f);
        assertEquals(200, reply.status(), reply.body());
      }
      assertEquals(before + 2 + 3, h.engine("P0").stats().getLong("requests"));
    }
  }

  /**
   * {@code serving.max_legs_in_flight} lowered from 8 to 1 by a reload while a batch runs 8 legs at once: the running
   * legs drain down to the new bound (never a new one granted above it), every prompt is still answered, and no
   * turn, reservation or in-flight slot is left behind.
   */
  @Test
  void loweringTheLegBoundUnderLoadNeitherDeadlocksNorLeaksTurns() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_legs_in_flight", 8)),
        (iid, o) -> o.setItlMs(5))) {
      Future<RouterHarness.Reply> batch = h.postAsync("/v1/completions", completions(oneTokenPrompts(40), 20));
      Future<RouterHarness.Reply> single = h.postAsync("/v1/completions", completions(new JsonArray().add(99), 20));
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_in_flight") == 8 && metric(h, "narwhal_legs_waiting") > 0,
          () -> "8 legs run, more wait: " + legLines(h));

      JsonObject lowered = h.config.toJson();
      lowered.getJsonObject("serving").put("max_legs_in_flight", 1);
      h.config = NarwhalConfig.fromJson(lowered);
      FailureChecks.eventually(h, () -> metric(h, "narwhal_legs_in_flight") <= 1 && metric(h, "narwhal_legs_waiting") > 0,
          () -> "the running legs drain down to the new bound while prompts still wait: " + legLines(h));
      RouterHarness.Reply answered = RouterHarness.await(batch);
      assertEquals(200, answered.status(), answered.body());
      assertEquals(40, answered.json().getJsonArray("choices").size());
      RouterHarness.Reply alone = RouterHarness.await(single);
      assertEquals(200, alone.status(), alone.body());

      assertEquals(0.0, metric(h, "narwhal_legs_in_flight"), legLines(h).toString());
      assertEquals(0.0, metric(h, "narwhal_legs_waiting"), legLines(h).toString());
      FailureChecks.eventually(h, () -> h.reservations() == 0, () -> "reservations left: " + h.reservations());
      assertEquals(0, h.get("/narwhal/state").json().getInteger("in_flight"));
    }
  }
}
