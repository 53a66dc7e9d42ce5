package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 26 item 1: a request whose prompt and output limit do not fit the model's context is refused before any leg
 * with vLLM's own 400, so no producer holds KV blocks for a decode that cannot run; a decode that still fails after a
 * prefill is journalled and counted as a handoff left to its lease.
 */
@Timeout(120)
class ContextFitTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }


  private static int held(String iid) {
    return h.engine(iid).stats().getInteger("handoffs_held");
  }

  /** The reproduction: 32 over-context requests, then normal traffic, on two producers of 4096 blocks each. */
  @Test
  void overContextRequestsHoldNoKvAndNormalTrafficIsServed() throws Exception {
    JsonObject tooLong = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", RouterHarness.words(4095)).put("max_tokens", 4);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", tooLong);
    assertEquals(400, direct.status(), direct.body());
    int heldBefore = held("P0") + held("P1");
    List<Future<RouterHarness.Reply>> refused = new ArrayList<>();
    for (int i = 0; i < 32; i++) refused.add(h.postAsync("/v1/completions", tooLong));
    List<RouterHarness.Reply> replies = new ArrayList<>();
    for (Future<RouterHarness.Reply> f : refused) replies.add(RouterHarness.await(f));
    for (RouterHarness.Reply reply : replies) assertEquals(400, reply.status(), reply.body());
    assertEquals(heldBefore, held("P0") + held("P1"), "no handoff held for requests that cannot decode");
    for (int i = 0; i < 20; i++) {
      RouterHarness.Reply ok = h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL)
          .put("prompt", RouterHarness.words(2000) + " normal " + i).put("max_tokens", 8));
      assertEquals(200, ok.status(), ok.body());
    }
    assertEquals(0, held("P0") + held("P1"));
    assertEquals(0, h.reservations());
    for (RouterHarness.Reply reply : replies) {
      assertEquals(direct.json(), reply.json(), "the router answers as the engine would");
      JsonObject row = h.journalRow(reply.requestId());
      assertEquals("invalid", row.getString("terminal"));
      assertEquals("context_length", row.getString("reason"));
      assertEquals(0, row.getInteger("attempts"));
    }
    assertTrue(h.engine("P0").requests().stream().noneMatch(r -> String.valueOf(r).contains(replies.get(0).requestId())),
        "no prefill leg was sent");
  }

  @Test
  void chatIsCountedWithItsTemplateAndRefusedAsTheEngineWould() {
    JsonArray messages = new JsonArray().add(new JsonObject().put("role", "system").put("content", RouterHarness.words(10)))
        .add(new JsonObject().put("role", "user").put("content", RouterHarness.words(4080)));
    JsonObject chat = new JsonObject().put("model", RouterHarness.MODEL).put("messages", messages).put("max_completion_tokens", 10);
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/chat/completions", chat);
    RouterHarness.Reply reply = h.post("/v1/chat/completions", chat);
    assertEquals(400, reply.status(), reply.body());
    assertEquals(direct.json(), reply.json());
    assertEquals("input_tokens", reply.error().getString("param"));
    assertEquals(0, held("P0") + held("P1"));
    JsonObject fits = chat.copy().put("max_completion_tokens", 2);
    assertEquals(200, h.post("/v1/chat/completions", fits).status(), "4092 prompt tokens + 2 fit 4096");
  }

  @Test
  void tokenIdsAndLimitsAboveTheContextAreSettledWithoutTokenizing() {
    long tokenized = h.engine("P0").stats().getLong("tokenize_requests") + h.engine("P1").stats().getLong("tokenize_requests");
    JsonArray ids = new JsonArray();
    for (int i = 0; i < 4000; i++) ids.add(i);
    JsonObject tokens = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", ids).put("max_tokens", 100);
    RouterHarness.Reply reply = h.post("/v1/completions", tokens);
    assertEquals(h.direct(h.engine("D0"), "/v1/completions", tokens).json(), reply.json());
    JsonObject huge = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hi").put("max_tokens", 5000);
    RouterHarness.Reply tooMany = h.post("/v1/completions", huge);
    assertEquals(400, tooMany.status());
    assertEquals(h.direct(h.engine("D0"), "/v1/completions", huge).json(), tooMany.json());
    assertEquals(200, h.post("/v1/completions", new JsonObject().put("prompt", "a short prompt").put("max_tokens", 5)).status());
    assertEquals(tokenized, h.engine("P0").stats().getLong("tokenize_requests") + h.engine("P1").stats().getLong("tokenize_requests"),
        "token ids, a limit above the context and a short text prompt need no /tokenize");
  }

  @Test
  void aHandoffTheRouterRefusesIsLeftToItsLeaseAndCounted() throws Exception {
    long stateBefore = h.get("/narwhal/state").json().getLong("handoffs_left");
    int heldBefore = held("P0") + held("P1");
    for (String p : List.of("P0", "P1")) {
      h.engine(p).faults().add(new JsonObject().put("kind", "descriptor_wrong_side_channel").put("phase", "prefill").put("count", 1));
    }
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("prompt", "refused handoff").put("max_tokens", 4));
    assertEquals(502, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals(1, row.getInteger("handoffs_left"), row.encode());
    assertEquals("left_to_lease", row.getJsonArray("attempt_failures").getJsonObject(0).getString("handoff"));
    assertEquals(heldBefore + 1, held("P0") + held("P1"), "the producer holds the blocks its refused descriptor named");
    assertEquals(stateBefore + 1, h.get("/narwhal/state").json().getLong("handoffs_left"));

    h.resetEngines();
    long missingBefore = h.get("/narwhal/state").json().getLong("handoffs_left");
    for (String p : List.of("P0", "P1")) {
      h.engine(p).faults().add(new JsonObject().put("kind", "descriptor_missing").put("phase", "prefill").put("count", 1));
    }
    RouterHarness.Reply missing = h.post("/v1/completions", new JsonObject().put("prompt", "no handoff").put("max_tokens", 4));
    assertEquals(502, missing.status(), missing.body());
    assertEquals(0, h.journalRow(missing.requestId()).getInteger("handoffs_left"), "a descriptor naming no blocks leaves none");
    assertEquals(missingBefore, h.get("/narwhal/state").json().getLong("handoffs_left"));
  }

  @Test
  void aDecodeThatFailsAfterItsPrefillIsAHandoffLeftToItsLease() throws Exception {
    int heldBefore = held("P0") + held("P1");
    double before = h.registry.get("narwhal.handoffs.left").counter().count();
    long stateBefore = h.get("/narwhal/state").json().getLong("handoffs_left");
    h.engine("D0").faults().add(new JsonObject().put("kind", "status").put("status", 400).put("phase", "decode").put("count", 1));
    RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("prompt", "left behind").put("max_tokens", 4));
    assertEquals(400, reply.status(), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals(1, row.getInteger("handoffs_left"));
    assertEquals("left_to_lease", row.getJsonArray("attempt_failures").getJsonObject(0).getString("handoff"));
    assertEquals(heldBefore + 1, held("P0") + held("P1"), "the simulator holds it until the lease ends");
    assertEquals(before + 1, h.registry.get("narwhal.handoffs.left").counter().count());
    assertEquals(stateBefore + 1, h.get("/narwhal/state").json().getLong("handoffs_left"));
  }
}
