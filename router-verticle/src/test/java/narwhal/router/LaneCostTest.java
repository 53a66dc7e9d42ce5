package narwhal.router;

import io.vertx.core.json.JsonObject;
import narwhal.common.config.TenantConfig;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What an attempt costs in the router's fair order (docs/operations.md#sharing-a-fleet): a quarter of the body's bytes
 * plus the tokens it asks for. A body naming several output limits is charged the largest: vLLM's completions endpoint
 * reads {@code max_tokens} and ignores {@code max_completion_tokens}, so a client sending {@code max_tokens: 10000}
 * with {@code max_completion_tokens: 1} had 10,000 tokens generated and was charged for one (the last field named);
 * and {@code max_tokens: "10000"}, a numeric string vLLM reads as the integer, was charged the default 16.
 */
class LaneCostTest {
  private static final TenantConfig T = new TenantConfig("t", "", "", "normal", 1, 0, 0, 0);

  @Test
  void aBodyNamingSeveralOutputLimitsIsChargedTheLargest() {
    JsonObject body = new JsonObject().put("model", "m").put("prompt", "hi").put("max_tokens", 10_000)
        .put("max_completion_tokens", 1);
    double cost = Admission.Lane.of(T, body.toBuffer().length(), 1, body).cost();
    assertTrue(cost >= 10_000, "charged for the 10,000 tokens the engine may generate, not " + cost);
    JsonObject chat = new JsonObject().put("model", "m").put("max_completion_tokens", 10_000).put("max_tokens", 1);
    assertTrue(Admission.Lane.of(T, chat.toBuffer().length(), 1, chat).cost() >= 10_000, "whichever field names it");
    // vLLM (pydantic) reads a numeric string as the integer; the router's validator takes it too
    JsonObject text = new JsonObject().put("model", "m").put("prompt", "hi").put("max_tokens", "10000");
    double textCost = Admission.Lane.of(T, text.toBuffer().length(), 1, text).cost();
    assertTrue(textCost >= 10_000, "max_tokens \"10000\" asks for 10,000 tokens, charged " + textCost);
  }
}
