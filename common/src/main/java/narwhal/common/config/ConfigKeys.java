package narwhal.common.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Every key of the fleet file by its full name ({@code serving.max_attempts}, {@code cluster.tls.enabled},
 * {@code engines[].url}), walked from the declarations of {@link NarwhalConfig#FILE}: what the override catalogue,
 * start-only detection and the docs test read. Sections are walked into, not listed; retired keys are listed.
 */
public final class ConfigKeys {
  /** The prefix of the keys of one {@code engines[]} entry. */
  public static final String ENGINE_ENTRY = "engines[].";
  /** The prefix of the keys of one {@code tenants} entry. */
  public static final String TENANT_ENTRY = "tenants.<name>.";
  private static final Map<String, Key<?, ?>> ALL = walk();

  private ConfigKeys() {
  }

  /** Every key, in the order the fleet file is written. */
  public static Map<String, Key<?, ?>> all() {
    return ALL;
  }

  /** The key named {@code fullName}, or null. */
  public static Key<?, ?> get(String fullName) {
    return ALL.get(fullName);
  }

  private static Map<String, Key<?, ?>> walk() {
    Map<String, Key<?, ?>> keys = new LinkedHashMap<>();
    add(NarwhalConfig.FILE, "", keys);
    add(EngineConfig.SECTION, ENGINE_ENTRY, keys);
    add(TenantConfig.SECTION, TENANT_ENTRY, keys);
    return Collections.unmodifiableMap(keys);
  }

  private static void add(Section<?> section, String prefix, Map<String, Key<?, ?>> keys) {
    for (Key<?, ?> key : section.keys()) {
      if (key.nested() != null) add(key.nested(), prefix + key.name() + ".", keys);
      else keys.put(prefix + key.name(), key);
    }
  }
}
