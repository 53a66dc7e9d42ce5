package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An engine's context as the router learned it is shown in {@code /narwhal/state} with where it was read, and read
 * again from {@code /v1/models} when the engine comes back to serving: a small {@code max_model_len} one
 * {@code /tokenize} answer reported does not stand for good. A limit above that answer's context is refused with
 * vLLM's words, never a negative token count.
 */
@Timeout(120)
class LearnedContextTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  /** Restarts P0 on its ports with another {@code max_model_len}, as an operator restarting the engine would. */
  private static void restartP0(int maxModelLen) {
    SimEngine old = h.engine("P0");
    int port = old.port();
    int sideChannel = old.sideChannelPort();
    RouterHarness.await(old.close());
    SimEngineOptions options = new SimEngineOptions().setName("P0").setRole("prefill").setPort(port).setSideChannelPort(sideChannel)
        .setMaxModelLen(maxModelLen);
    h.engines.put("P0", RouterHarness.await(SimEngine.start(h.vertx, options)));
  }

  private static JsonObject chat(int limit) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("max_completion_tokens", limit)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "count me")));
  }

  private static void awaitContext(String iid, int len, String from) throws Exception {
    for (int i = 0; i < 500; i++) {
      JsonObject engine = ContractReadmissionTest.engine(h, iid);
      if (Integer.valueOf(len).equals(engine.getInteger("max_model_len")) && from.equals(engine.getString("max_model_len_from"))) {
        return;
      }
      RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError(iid + " never learned " + len + " from " + from + ": " + ContractReadmissionTest.engine(h, iid));
  }

  @Test
  void aSmallContextFromTokenizeIsShownAndReadAgainWhenTheEngineServesAgain() throws Exception {
    awaitContext("P0", 4096, "models");
    restartP0(8);
    RouterHarness.Reply refused = h.post("/v1/chat/completions", chat(12));
    assertEquals(400, refused.status(), refused.body());
    assertEquals("max_completion_tokens=12 cannot be greater than max_model_len=max_total_tokens=8. Please request fewer "
        + "output tokens. (parameter=max_completion_tokens, value=12)", refused.error().getString("message"),
        "no negative token count");
    awaitContext("P0", 8, "tokenize");
    assertEquals(8, h.get("/narwhal/state").json().getJsonObject("models").getJsonObject(RouterHarness.MODEL)
        .getInteger("max_model_len"));

    restartP0(4096);
    h.admin("eject", new JsonObject().put("iid", "P0").put("force", true));
    ContractReadmissionTest.awaitState(h, "P0", "ejected", () -> { });
    h.admin("readmit", new JsonObject().put("iid", "P0"));
    ContractReadmissionTest.awaitState(h, "P0", "serving", () -> { });
    awaitContext("P0", 4096, "models");
    assertEquals(4096, h.get("/narwhal/state").json().getJsonObject("models").getJsonObject(RouterHarness.MODEL)
        .getInteger("max_model_len"));
    RouterHarness.Reply served = h.post("/v1/chat/completions", chat(12));
    assertEquals(200, served.status(), served.body());
    assertTrue(served.json().getJsonArray("choices").size() == 1);
  }
}
