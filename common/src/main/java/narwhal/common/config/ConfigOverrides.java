package narwhal.common.config;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Start-time overrides of fleet-file keys (docs/configuration.md), so one file serves every replica: environment variables
 * {@code NARWHAL_<SECTION>_<KEY>} (the key upper-cased, dots as underscores: {@code NARWHAL_SERVER_PORT},
 * {@code NARWHAL_CLUSTER_TLS_ENABLED}) and repeatable {@code --set section.key=value}; precedence file &lt;
 * environment &lt; {@code --set} (the last {@code --set} of a key wins). Overrides are applied to the file's JSON, then
 * the whole is validated like a file, so a bad override is refused with the file's message plus where it came from.
 * {@link #parse} is used at start and on every hot reload, which therefore re-applies them.
 *
 * <p>Values are text, read by the key's declared {@link Key.Type}: a string key takes the text as it is (no quotes;
 * {@code --set server.api_key_env=} sets ""); numbers and booleans are read as JSON ({@code 8000}, {@code 2.5},
 * {@code true}); a list is a JSON array ({@code ["10.0.0.1","10.0.0.2:5701"]}) or, for a list of strings, the
 * comma-separated items ({@code 10.0.0.1,10.0.0.2:5701}); an object ({@code engine_contract}, or {@code engines}
 * whole) is JSON. Every key the file can hold outside the engine list can be overridden, each leaf of a section
 * separately; {@code engines} only whole. Environment variables starting {@code NARWHAL_} that name no key are left
 * alone (the admin token, for one, is {@code NARWHAL_ADMIN_TOKEN}).
 */
public final class ConfigOverrides {
  public static final String ENV_PREFIX = "NARWHAL_";
  /** Every overridable key (whose declared type says how a text is read). */
  private static final Map<String, Key<?, ?>> KEYS = catalogue();
  private static final Map<String, String> KEY_BY_ENV_NAME = byEnvName();
  private static final ConfigOverrides NONE = new ConfigOverrides(List.of());

  /** One override: the key, its text and where it came from (for messages). */
  public record Override(String key, String text, String source) {
  }

  private final List<Override> overrides;

  private ConfigOverrides(List<Override> overrides) {
    this.overrides = List.copyOf(overrides);
  }

  public static ConfigOverrides none() {
    return NONE;
  }

  /**
   * The overrides from {@code environment} (the {@code NARWHAL_*} variables that name a key) and then from
   * {@code assignments} ({@code section.key=value}, in order). A malformed assignment or an unknown key in one is
   * refused.
   */
  public static ConfigOverrides of(Map<String, String> environment, List<String> assignments) {
    List<Override> list = new ArrayList<>();
    new TreeMap<>(environment).forEach((name, value) -> {
      String key = KEY_BY_ENV_NAME.get(name);
      if (key != null && !SERVICE_LINK_VALUE.matcher(value).matches()) {
        list.add(new Override(key, value, "environment variable " + name));
      }
    });
    for (String assignment : assignments) {
      int eq = assignment.indexOf('=');
      String source = "--set " + assignment;
      if (eq <= 0) {
        throw new ConfigException("", source + ": expected section.key=value, e.g. --set server.port=8001");
      }
      String key = assignment.substring(0, eq).strip();
      if (!KEYS.containsKey(key)) {
        throw new ConfigException(key, key + ": unknown key (from " + source + ")");
      }
      list.add(new Override(key, assignment.substring(eq + 1), source));
    }
    return new ConfigOverrides(list);
  }

  public List<Override> list() {
    return overrides;
  }

  public boolean isEmpty() {
    return overrides.isEmpty();
  }

  /** The environment variable that overrides {@code key}, e.g. {@code NARWHAL_SERVER_PORT} for server.port. */
  public static String envName(String key) {
    return ENV_PREFIX + key.replace('.', '_').toUpperCase(Locale.ROOT);
  }

  /** Every key that can be overridden, sorted. */
  public static Set<String> keys() {
    return Collections.unmodifiableSet(new java.util.TreeSet<>(KEYS.keySet()));
  }

  /**
   * The {@code NARWHAL_*} names in {@code environment} that override nothing and are not one of the variables the
   * configuration names for secrets ({@code *_env} keys) either, nor {@code NARWHAL_JAVA_OPTS}: likely typos.
   */
  public static List<String> unmatched(Map<String, String> environment, NarwhalConfig config) {
    Set<String> named = new HashSet<>();
    named.add("NARWHAL_JAVA_OPTS");
    collectEnvNames(config.toJson(), named);
    List<String> links = serviceLinks(environment);
    return environment.keySet().stream().filter(n -> n.startsWith(ENV_PREFIX) && !KEY_BY_ENV_NAME.containsKey(n)
        && !named.contains(n) && !links.contains(n)).sorted().toList();
  }

  /**
   * A value Kubernetes gives a service link ({@code NARWHAL_SERVER_PORT=tcp://10.96.0.12:12000} for a Service named
   * {@code narwhal-server}): never an override, whatever key its name matches.
   */
  static final java.util.regex.Pattern SERVICE_LINK_VALUE = java.util.regex.Pattern.compile("(?i)(tcp|udp|sctp)://\\S+:\\d+");
  /** The names of Kubernetes' other service-link variables ({@code *_SERVICE_HOST}, {@code *_PORT_12000_TCP_ADDR}, ...). */
  private static final java.util.regex.Pattern SERVICE_LINK_NAME = java.util.regex.Pattern.compile(
      ".*_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_\\d+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)");

  /**
   * The {@code NARWHAL_*} variables that look like Kubernetes service links (a Service whose name starts with
   * {@code narwhal-} in the pod's namespace, unless the pod sets {@code enableServiceLinks: false}): left alone, sorted.
   */
  public static List<String> serviceLinks(Map<String, String> environment) {
    return environment.entrySet().stream().filter(e -> e.getKey().startsWith(ENV_PREFIX)
            && (SERVICE_LINK_VALUE.matcher(e.getValue()).matches() || SERVICE_LINK_NAME.matcher(e.getKey()).matches()))
        .map(Map.Entry::getKey).sorted().toList();
  }

  /** Parses a fleet file's text with the overrides applied, validated as a whole. */
  public NarwhalConfig parse(String fileText) {
    Object value = JsonText.decode(fileText);
    if (!(value instanceof JsonObject)) {
      throw ConfigException.malformed("expected an object at the top level");
    }
    JsonObject merged = applyTo((JsonObject) value);
    try {
      return NarwhalConfig.fromJson(merged);
    } catch (ConfigException e) {
      throw attributed(e);
    }
  }

  /**
   * The {@code cluster} and {@code admin} sections of a fleet file's text with the overrides applied, validated
   * alone: all the admin command line needs, so it works while another section of the file is invalid.
   */
  public NarwhalConfig.AdminView parseAdminView(String fileText) {
    Object value = JsonText.decode(fileText);
    if (!(value instanceof JsonObject)) {
      throw ConfigException.malformed("expected an object at the top level");
    }
    try {
      return NarwhalConfig.adminView(applyTo((JsonObject) value));
    } catch (ConfigException e) {
      throw attributed(e);
    }
  }

  /** A copy of {@code file} with every override put in place (sections created where the file has none). */
  public JsonObject applyTo(JsonObject file) {
    JsonObject merged = file.copy();
    for (Override o : overrides) {
      String[] path = o.key().split("\\.");
      JsonObject parent = merged;
      for (int i = 0; i < path.length - 1 && parent != null; i++) {
        Object child = parent.getValue(path[i]);
        if (child == null) {
          child = new JsonObject();
          parent.put(path[i], child);
        }
        // a section that is not an object is refused by validation, naming the file's value
        parent = child instanceof JsonObject object ? object : null;
      }
      if (parent != null) parent.put(path[path.length - 1], value(o));
    }
    return merged;
  }

  private static Object value(Override o) {
    Key.Type type = KEYS.get(o.key()).type();
    String text = o.text();
    if (type == Key.Type.STRING) return text;
    String trimmed = text.strip();
    if (type == Key.Type.BOOLEAN) {
      return "true".equals(trimmed) ? Boolean.TRUE : "false".equals(trimmed) ? Boolean.FALSE : text;
    }
    if (type == Key.Type.INTEGER || type == Key.Type.NUMBER) {
      try {
        Object number = Json.decodeValue(trimmed);
        return number instanceof Number ? number : text;
      } catch (DecodeException notJson) {
        return text;
      }
    }
    boolean list = type == Key.Type.STRINGS || type == Key.Type.LIST;
    if (list && !trimmed.startsWith("[")) {
      JsonArray items = new JsonArray();
      for (String item : trimmed.split(",")) {
        if (!item.isBlank()) items.add(item.strip());
      }
      return items;
    }
    try {
      return Json.decodeValue(trimmed);
    } catch (DecodeException notJson) {
      String expected = list ? "a JSON array or comma-separated items" : "JSON (an object or null)";
      throw new ConfigException(o.key(), o.key() + ": " + Json.encode(text) + " is not valid: expected " + expected
          + " (from " + o.source() + ")");
    }
  }

  /** The refusal with where the offending value came from, when an override set it (the last one wins). */
  private ConfigException attributed(ConfigException e) {
    for (int i = overrides.size() - 1; i >= 0; i--) {
      Override o = overrides.get(i);
      String key = e.key();
      if (key.equals(o.key()) || key.startsWith(o.key() + ".") || key.startsWith(o.key() + "[")) {
        return new ConfigException(key, e.getMessage() + " (from " + o.source() + ")");
      }
    }
    return e;
  }

  /** Every declared key but those of one engine entry ({@code engines} is overridden whole). */
  private static Map<String, Key<?, ?>> catalogue() {
    Map<String, Key<?, ?>> keys = new LinkedHashMap<>(ConfigKeys.all());
    keys.keySet().removeIf(k -> k.startsWith(ConfigKeys.ENGINE_ENTRY) || k.startsWith(ConfigKeys.TENANT_ENTRY));
    return Collections.unmodifiableMap(keys);
  }

  private static Map<String, String> byEnvName() {
    Map<String, String> names = new LinkedHashMap<>();
    for (String key : KEYS.keySet()) {
      String previous = names.put(envName(key), key);
      if (previous != null) {
        throw new IllegalStateException(key + " and " + previous + " share the variable " + envName(key));
      }
    }
    return Collections.unmodifiableMap(names);
  }

  private static void collectEnvNames(JsonObject object, Set<String> names) {
    for (String name : object.fieldNames()) {
      Object value = object.getValue(name);
      if (value instanceof JsonObject child) collectEnvNames(child, names);
      else if (name.endsWith("_env") && value instanceof String s) names.add(s);
    }
  }
}
