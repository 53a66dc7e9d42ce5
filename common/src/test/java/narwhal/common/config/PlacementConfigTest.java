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

  @Test
  void theSessionHeaderIsOffOrAHeaderNameAClientSendsPerConversation() {
    for (String ok : new String[] {"", "x-session-id", "X-Conversation", "x_user.id"}) {
      String json = new io.vertx.core.json.JsonObject().put("session_header", ok).encode();
      assertEquals(ok, NarwhalConfig.fromJson(withSection("placement", json)).placement().sessionHeader());
    }
    String expectation = "expected \"\" (off) or an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) other than "
        + "content-length, content-type, transfer-encoding, host, connection, accept, user-agent";
    for (String bad : new String[] {"x session", "x-sessión", "x-id:", "Content-Length", "host"}) {
      String json = new io.vertx.core.json.JsonObject().put("session_header", bad).encode();
      ConfigException e = assertThrows(ConfigException.class, () -> NarwhalConfig.fromJson(withSection("placement", json)));
      assertEquals("placement.session_header", e.key());
      assertEquals("placement.session_header: " + new io.vertx.core.json.JsonArray().add(bad).encode().replaceAll("^\\[|\\]$", "")
          + " is not valid: " + expectation, e.getMessage());
    }
  }
}
