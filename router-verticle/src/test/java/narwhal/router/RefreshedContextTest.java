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
 * The periodic reading of the engines' {@code /v1/models} ({@code placement.models_refresh_s}) is also where the router
 * learns their context: an engine restarted on its port with another {@code --max-model-len}, still serving (nothing
 * ejects or readmits it), is seen in {@code /narwhal/state} and by the context check after the next reading.
 */
@Timeout(120)
class RefreshedContextTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("placement", new JsonObject().put("models_refresh_s", 0.2)));
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

  private static void awaitContext(String iid, int len) {
    for (int i = 0; i < 1000; i++) {
      JsonObject engine = ContractReadmissionTest.engine(h, iid);
      if (Integer.valueOf(len).equals(engine.getInteger("max_model_len")) && "models".equals(engine.getString("max_model_len_from"))) {
        return;
      }
      RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError(iid + " never learned " + len + " from its models: " + ContractReadmissionTest.engine(h, iid));
  }

  /** 2,000 token ids and 100 output tokens: settled by counting, no /tokenize asked. */
  private static JsonObject tokenIds() {
    JsonArray ids = new JsonArray();
    for (int i = 0; i < 2000; i++) ids.add(i);
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", ids).put("max_tokens", 100);
  }

  @Test
  void anEngineRestartedWithAnotherContextIsCheckedAgainstItAfterOneRefresh() {
    awaitContext("P0", 4096);
    assertEquals(200, h.post("/v1/completions", tokenIds()).status(), "2100 tokens fit 4096");

    restartP0(2048);
    awaitContext("P0", 2048);
    assertEquals(2048, h.get("/narwhal/state").json().getJsonObject("models").getJsonObject(RouterHarness.MODEL)
        .getInteger("max_model_len"));
    RouterHarness.Reply refused = h.post("/v1/completions", tokenIds());
    assertEquals(400, refused.status(), refused.body());
    assertTrue(refused.error().getString("message").startsWith("This model's maximum context length is 2048 tokens."),
        refused.body());
    assertEquals("context_length", FailureChecks.rowFor(h, refused.requestId()).getString("reason"), "refused before any leg");

    restartP0(4096);
    awaitContext("P0", 4096);
    assertEquals(200, h.post("/v1/completions", tokenIds()).status(), refused.body());
  }
}
