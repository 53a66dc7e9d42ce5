package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The router refuses to start with client keys it cannot read, or with the engines' key among them. */
class AccessTest {
  private static NarwhalConfig fleet(String apiKeyEnv, String opsTokenEnv, String engineKeyEnv) {
    return NarwhalConfig.fromJson(new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "B0").put("url", "http://127.0.0.1:9")))
        .put("server", new JsonObject().put("api_key_env", apiKeyEnv).put("ops_token_env", opsTokenEnv))
        .put("engine", new JsonObject().put("engine_api_key_env", engineKeyEnv)));
  }

  @Test
  void theEnginesKeyIsNeverAClientKeyOrTheOpsToken() {
    ConfigException client = assertThrows(ConfigException.class, () -> Access.resolve(fleet("KEYS", "", "ENGINE"),
        Map.of("KEYS", "a,shared", "ENGINE", "shared")::get));
    assertEquals("server.api_key_env", client.key());
    assertEquals("server.api_key_env: a key in the environment variable KEYS is the engines' key (engine.engine_api_key_env): expected client "
        + "keys different from the engines' key", client.getMessage());
    ConfigException ops = assertThrows(ConfigException.class, () -> Access.resolve(fleet("", "OPS", "ENGINE"),
        Map.of("OPS", "shared", "ENGINE", "shared")::get));
    assertEquals("server.ops_token_env", ops.key());
  }

  @Test
  void aNamedVariableThatIsUnsetStopsTheStartInsteadOfOpeningTheRouter() {
    ConfigException e = assertThrows(ConfigException.class, () -> Access.resolve(fleet("KEYS", "", ""), name -> null));
    assertEquals("server.api_key_env", e.key());
    Access open = Access.resolve(fleet("", "", ""), name -> null);
    assertTrue(open.clients().isOpen() && open.ops().isOpen());
    assertEquals("", fleet("", "", "ENGINE").engine().engineApiKey(name -> null));
  }
}
