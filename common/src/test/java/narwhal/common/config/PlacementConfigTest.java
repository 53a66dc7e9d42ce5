package narwhal.common.config;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PlacementConfigTest {
  @Test
  void withPolicyKeepsEverySetting() {
    PlacementConfig custom = new PlacementConfig(PlacementConfig.LOAD, 2.0, 0.25, "x-user", 128, 4, 1.5, 7.5);
    PlacementConfig other = custom.withPolicy(PlacementConfig.LEAST_RESERVED);
    assertEquals(new PlacementConfig(PlacementConfig.LEAST_RESERVED, 2.0, 0.25, "x-user", 128, 4, 1.5, 7.5), other);
  }
}
