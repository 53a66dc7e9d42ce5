package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Names the environment variable holding the admin token (docs/operations.md#admin-commands); the token itself never
 * appears in the fleet file.
 */
public record AdminConfig(String tokenEnv) {

  static final Set<String> KEYS = Set.of("token_env");

  public static AdminConfig defaults() {
    return new AdminConfig("NARWHAL_ADMIN_TOKEN");
  }

  static AdminConfig read(SectionReader r) {
    return new AdminConfig(r.nonEmptyString("token_env", defaults().tokenEnv()));
  }

  public JsonObject toJson() {
    return new JsonObject().put("token_env", tokenEnv);
  }
}
