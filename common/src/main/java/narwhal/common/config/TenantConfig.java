package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;

/**
 * One tenant of {@code tenants} (docs/configuration.md): the client keys that name it ({@code api_key_file} or
 * {@code api_key_env}, read as {@code server.api_key_*} are), its priority class ({@code high} before {@code normal}
 * before {@code low} in the router's queue), its weight against the other tenants of its class, and its quotas,
 * counted across every replica of the cluster (0 = none): requests and tokens (prompt and completion, from the
 * engines' usage) per minute, and requests at once.
 */
public record TenantConfig(String name, String apiKeyFile, String apiKeyEnv, String priorityClass, int weight,
                           long requestsPerMinute, long tokensPerMinute, int maxConcurrent) {
  /** The classes, highest first. */
  public static final List<String> CLASSES = List.of("high", "normal", "low");
  public static final String DEFAULT_CLASS = "normal";
  /** What a tenant's name may be: it is a metric label and a journal field. */
  public static final String NAME_SYNTAX = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";

  static final Key<TenantConfig, String> API_KEY_FILE = Key.string("api_key_file", TenantConfig::apiKeyFile, "");
  static final Key<TenantConfig, String> API_KEY_ENV = Key.text("api_key_env", TenantConfig::apiKeyEnv, "",
      s -> s.isEmpty() || s.matches("[A-Za-z_][A-Za-z0-9_]*"), "\"\" or an environment variable's name");
  static final Key<TenantConfig, String> CLASS = Key.oneOf("class", TenantConfig::priorityClass, DEFAULT_CLASS, CLASSES);
  static final Key<TenantConfig, Integer> WEIGHT = Key.integer("weight", TenantConfig::weight, 1, 1, 1_000);
  static final Key<TenantConfig, Long> REQUESTS_PER_MINUTE = Key.whole("requests_per_minute",
      TenantConfig::requestsPerMinute, 0, 0, 1_000_000_000L, "an integer from 0 (no quota) to 1000000000");
  static final Key<TenantConfig, Long> TOKENS_PER_MINUTE = Key.whole("tokens_per_minute",
      TenantConfig::tokensPerMinute, 0, 0, 1_000_000_000_000L, "an integer from 0 (no quota) to 1000000000000");
  static final Key<TenantConfig, Integer> MAX_CONCURRENT =
      Key.integer("max_concurrent", TenantConfig::maxConcurrent, 0, 0, 1_000_000);
  static final Section<TenantConfig> SECTION = new Section<>(API_KEY_FILE, API_KEY_ENV, CLASS, WEIGHT,
      REQUESTS_PER_MINUTE, TOKENS_PER_MINUTE, MAX_CONCURRENT);

  public TenantConfig {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(priorityClass, "priorityClass");
  }

  /** The tenant requests fall into when no key or header names a configured one: no quota, class normal. */
  public static TenantConfig fallback(String name) {
    return new TenantConfig(name, "", "", DEFAULT_CLASS, 1, 0, 0, 0);
  }

  static TenantConfig read(String name, SectionReader r) {
    String file = r.get(API_KEY_FILE);
    String env = r.get(API_KEY_ENV);
    SecretRef.notBoth(r.key(API_KEY_FILE.name()), file, r.key(API_KEY_ENV.name()), env);
    return new TenantConfig(name, file, env, r.get(CLASS), r.get(WEIGHT), r.get(REQUESTS_PER_MINUTE),
        r.get(TOKENS_PER_MINUTE), r.get(MAX_CONCURRENT));
  }

  /** Where this tenant's keys come from. */
  public SecretRef apiKey() {
    return new SecretRef("tenants." + name + ".api_key_file", apiKeyFile, "tenants." + name + ".api_key_env", apiKeyEnv);
  }

  /** 0 for {@code high}, 1 {@code normal}, 2 {@code low}. */
  public int rank() {
    return CLASSES.indexOf(priorityClass);
  }

  public boolean hasQuota() {
    return requestsPerMinute > 0 || tokensPerMinute > 0 || maxConcurrent > 0;
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
