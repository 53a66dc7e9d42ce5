package narwhal.router;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** narwhal_tokens_total counts the engine's usage by kind, cached prompt tokens included when the engine reports them. */
class ModelMetricsTest {
  @Test
  void usageIsCountedByKindIncludingCachedPromptTokens() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    ModelMetrics metrics = new ModelMetrics(registry, java.util.List.of("m"));
    assertEquals(0, count(registry, "m", "cached"), "registered at zero from start");
    metrics.of("m").usage(new JsonObject().put("prompt_tokens", 120).put("completion_tokens", 7).put("total_tokens", 127)
        .put("prompt_tokens_details", new JsonObject().put("cached_tokens", 96)));
    metrics.of("m").usage(new JsonObject().put("prompt_tokens", 10).put("completion_tokens", 3).put("prompt_tokens_details", null));
    metrics.of("m").usage(null);
    assertEquals(130, count(registry, "m", "prompt"));
    assertEquals(10, count(registry, "m", "completion"));
    assertEquals(96, count(registry, "m", "cached"));
  }

  private static double count(SimpleMeterRegistry registry, String model, String kind) {
    return registry.get("narwhal.tokens").tag("model", model).tag("kind", kind).counter().count();
  }
}
