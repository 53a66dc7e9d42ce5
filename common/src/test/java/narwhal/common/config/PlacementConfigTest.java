package narwhal.common.config;

import org.junit.jupiter.api.Test;

import static narwhal.common.config.Fleets.withSection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PlacementConfigTest {
  @Test
  void withPolicyKeepsEverySetting() {
    PlacementConfig custom = new PlacementConfig(PlacementConfig.LOAD, 2.0, 0.25, "x-user", 128, 4, 1.5, 7.5);
    PlacementConfig other = custom.withPolicy(PlacementConfig.LEAST_RESERVED);
    assertEquals(new PlacementConfig(PlacementConfig.LEAST_RESERVED, 2.0, 0.25, "x-user", 128, 4, 1.5, 7.5), other);
    PlacementConfig local = new PlacementConfig(PlacementConfig.LOAD, 2.0, 0.25, "x-user", 128, 4, 1.5, 7.5, 256);
    assertEquals(256, local.withPolicy(PlacementConfig.CACHE_AWARE).localPrefillMaxTokens());
  }

  @Test
  void localPrefillIsOffByDefaultAndValidated() {
    assertEquals(0, PlacementConfig.defaults().localPrefillMaxTokens());
    PlacementConfig read = NarwhalConfig.fromJson(withSection("placement", "{\"local_prefill_max_tokens\": 512}")).placement();
    assertEquals(512, read.localPrefillMaxTokens());
    assertEquals(512, NarwhalConfig.fromJson(withSection("placement", read.toJson().encode())).placement().localPrefillMaxTokens());
    ConfigException e = assertThrows(ConfigException.class,
        () -> NarwhalConfig.fromJson(withSection("placement", "{\"local_prefill_max_tokens\": -1}")));
    assertEquals("placement.local_prefill_max_tokens", e.key());
    assertEquals("placement.local_prefill_max_tokens: -1 is not valid: expected an integer from 0 to 1048576", e.getMessage());
  }
}
