package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/**
 * Names the environment variable holding the admin token (docs/operations.md#admin-commands); the token itself never
 * appears in the fleet file.
 */
public record AdminConfig(String tokenEnv) {

  public static final String DEFAULT_TOKEN_ENV = "NARWHAL_ADMIN_TOKEN";

  static final Key<AdminConfig, String> TOKEN_ENV = Key.nonEmpty("token_env", AdminConfig::tokenEnv, DEFAULT_TOKEN_ENV);
  static final Section<AdminConfig> SECTION = new Section<>(TOKEN_ENV);

  public static AdminConfig defaults() {
    return read(SectionReader.empty("admin", SECTION));
  }

  static AdminConfig read(SectionReader r) {
    return new AdminConfig(r.get(TOKEN_ENV));
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
