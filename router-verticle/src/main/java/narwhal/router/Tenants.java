package narwhal.router;

import narwhal.common.auth.BearerKeys;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.TenantConfig;
import narwhal.common.config.TenantsConfig;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Who is asking (docs/operations.md#sharing-a-fleet): each tenant's client keys ({@code tenants.<name>.api_key_*}),
 * read as {@code server.api_key_*} are, looked up by their SHA-256 so a request's key finds its tenant in one step
 * whatever the number of keys. A request whose key names no tenant (a {@code server.api_key_*} key, or no key on an
 * open router) is the tenant {@code flow.tenant_header} names, if that is a configured tenant without keys, else
 * {@code default}.
 */
final class Tenants {
  static final Tenants NONE = new Tenants(TenantsConfig.none(), Map.of(), "");
  private final TenantsConfig config;
  /** Hex SHA-256 of a key to its tenant's name. */
  private final Map<String, String> byKey;
  private final String header;

  private Tenants(TenantsConfig config, Map<String, String> byKey, String header) {
    this.config = config;
    this.byKey = byKey;
    this.header = header;
  }

  /**
   * Reads every tenant's keys through {@code env}; refuses (naming the key) a source that cannot be read, a key two
   * tenants share, and a tenant key that is the engines' key {@code engineKey} ("" when none).
   */
  static Tenants resolve(NarwhalConfig cfg, UnaryOperator<String> env, String engineKey) {
    Map<String, String> byKey = new HashMap<>();
    for (TenantConfig t : cfg.tenants().all()) {
      if (!t.apiKey().configured()) continue;
      BearerKeys.from(t.apiKey(), env);
      for (String key : BearerKeys.split(env.apply(t.apiKey().lookupName()))) {
        if (!engineKey.isEmpty() && BearerKeys.same(engineKey, key)) {
          throw new ConfigException(t.apiKey().key(), t.apiKey().key() + ": a key in " + t.apiKey().describe()
              + " is the engines' key: expected client keys different from the engines' key");
        }
        String other = byKey.put(digest(key), t.name());
        if (other != null && !other.equals(t.name())) {
          throw new ConfigException(t.apiKey().key(), t.apiKey().key() + ": a key in " + t.apiKey().describe()
              + " is also tenant " + other + "'s key: expected each key in one tenant only");
        }
      }
    }
    return new Tenants(cfg.tenants(), Map.copyOf(byKey), cfg.flow().tenantHeader());
  }

  /** Whether some tenant has keys: {@code /v1/*} then needs a key. */
  boolean keyed() {
    return !byKey.isEmpty();
  }

  /** The tenant whose key {@code key} is, or null. */
  String ofKey(String key) {
    return key == null || byKey.isEmpty() ? null : byKey.get(digest(key));
  }

  /**
   * The tenant of a request: {@code keyTenant} when its key named one, else the header's tenant when that tenant has no
   * keys of its own (a keyed tenant is claimed by its key only: a header cannot borrow its class or spend its quota),
   * else the fallback.
   */
  TenantConfig of(String keyTenant, String headerValue) {
    if (keyTenant != null) return config.get(keyTenant);
    TenantConfig named = headerValue == null ? null : config.byName().get(headerValue);
    if (named != null && !named.apiKey().configured()) return named;
    return config.get(TenantsConfig.FALLBACK);
  }

  /** {@code flow.tenant_header}, "" when none. */
  String header() {
    return header;
  }

  private static String digest(String key) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }
}
