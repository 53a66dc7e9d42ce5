package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code tenants} object of the fleet file: tenant name to {@link TenantConfig}, at most {@value #MAX_TENANTS}
 * (each is a metric label). Whether two tenants share a key is known only once the keys are read
 * ({@code narwhal.router.Tenants}).
 */
public record TenantsConfig(Map<String, TenantConfig> byName) {
  public static final int MAX_TENANTS = 256;
  /** The name of the tenant that requests no configured tenant claims fall into. */
  public static final String FALLBACK = "default";
  /** The fallback tenant's settings when no tenant of that name is configured. */
  private static final TenantConfig FALLBACK_TENANT = TenantConfig.fallback(FALLBACK);

  public TenantsConfig {
    byName = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(byName, "byName")));
  }

  public static TenantsConfig none() {
    return new TenantsConfig(Map.of());
  }

  static TenantsConfig read(SectionReader root) {
    Object value = root.raw("tenants");
    if (value == null) return none();
    if (!(value instanceof JsonObject json)) throw ConfigException.invalid("tenants", value, "an object of tenant name to tenant");
    if (json.size() > MAX_TENANTS) {
      throw ConfigException.invalid("tenants", json.size() + " tenants", "at most " + MAX_TENANTS + " tenants");
    }
    Map<String, TenantConfig> tenants = new LinkedHashMap<>();
    for (String name : json.fieldNames()) {
      String key = "tenants." + name;
      if (!name.matches(TenantConfig.NAME_SYNTAX)) {
        throw ConfigException.invalid(key, name, "a tenant name of 1-64 letters, digits, '.', '_' or '-'");
      }
      Object entry = json.getValue(name);
      if (!(entry instanceof JsonObject object)) throw ConfigException.invalid(key, entry, "an object");
      tenants.put(name, TenantConfig.read(name, SectionReader.of(object, key, TenantConfig.SECTION)));
    }
    return new TenantsConfig(tenants);
  }

  public Collection<TenantConfig> all() {
    return byName.values();
  }

  public boolean isEmpty() {
    return byName.isEmpty();
  }

  /** The configured tenant {@code name}, or the fallback tenant's settings ({@link #FALLBACK} may be configured). */
  public TenantConfig get(String name) {
    TenantConfig t = byName.get(name);
    return t != null ? t : byName.getOrDefault(FALLBACK, FALLBACK_TENANT);
  }

  public JsonObject toJson() {
    JsonObject json = new JsonObject();
    byName.forEach((name, t) -> json.put(name, t.toJson()));
    return json;
  }
}
