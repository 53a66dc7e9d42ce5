package narwhal.common.config;

import static narwhal.common.config.Fleets.minimal;
import static narwhal.common.config.Fleets.withSection;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * {@code serving.max_batch_prompts} and {@code serving.max_legs_in_flight}: their defaults, and the leg bound following
 * {@code serving.max_in_flight} until a file sets it (a replica whose in-flight limit was raised for thousands of
 * streams must not start queueing them at the leg bound's default).
 */
class BatchLimitsConfigTest {

  @Test
  void defaultsAreOpenAisPromptBoundAndTheInFlightLimit() {
    ServingConfig serving = NarwhalConfig.fromJson(minimal()).serving();
    assertEquals(2048, serving.maxBatchPrompts());
    assertEquals(serving.maxInFlight(), serving.maxLegsInFlight());
  }

  @Test
  void unsetTheLegBoundFollowsTheInFlightLimit() {
    ServingConfig serving = NarwhalConfig.fromJson(withSection("serving", "{\"max_in_flight\": 20000}")).serving();
    assertEquals(20000, serving.maxLegsInFlight());
  }

  @Test
  void setTheLegBoundIsItsOwn() {
    ServingConfig serving = NarwhalConfig.fromJson(withSection("serving",
        "{\"max_in_flight\": 20000, \"max_legs_in_flight\": 64, \"max_batch_prompts\": 10}")).serving();
    assertEquals(64, serving.maxLegsInFlight());
    assertEquals(10, serving.maxBatchPrompts());
  }
}
