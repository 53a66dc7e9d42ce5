package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/**
 * Where the admin token comes from (docs/operations.md#admin-commands): {@code token_file} when set (re-read when it
 * changes), else the environment variable {@code token_env} names; the token itself never appears in the fleet file.
 */
public record AdminConfig(String tokenEnv, String tokenFile) {

  public static final String DEFAULT_TOKEN_ENV = "NARWHAL_ADMIN_TOKEN";

  static final Key<AdminConfig, String> TOKEN_ENV = Key.nonEmpty("token_env", AdminConfig::tokenEnv, DEFAULT_TOKEN_ENV);
  static final Key<AdminConfig, String> TOKEN_FILE = Key.string("token_file", AdminConfig::tokenFile, "");
  static final Section<AdminConfig> SECTION = new Section<>(TOKEN_ENV, TOKEN_FILE);

  public static AdminConfig defaults() {
    return read(SectionReader.empty("admin", SECTION));
  }

  static AdminConfig read(SectionReader r) {
    return new AdminConfig(r.get(TOKEN_ENV), r.get(TOKEN_FILE));
  }

  /** The admin token's source: the file when {@code token_file} is set (it wins over the default variable). */
  public SecretRef token() {
    return new SecretRef("admin.token_file", tokenFile, "admin.token_env", tokenFile.isEmpty() ? tokenEnv : "");
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
