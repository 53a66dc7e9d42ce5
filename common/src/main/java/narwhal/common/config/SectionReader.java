package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.util.Set;
import java.util.function.Predicate;
import java.util.logging.Logger;

/**
 * Reads the values of one JSON object of the fleet file (the root, a section, an engine entry),
 * applying defaults and refusing anything out of its range with a {@link ConfigException} that
 * names the full key. Keys the object does not declare are refused when the reader is made; a retired key
 * ({@link Key#replacedBy}) is read as before and logged with what replaces it.
 */
final class SectionReader {
  /** Where warnings about the fleet file go (a retired key in use). */
  static final Logger LOG = Logger.getLogger("narwhal.common.config");

  private final JsonObject json;
  private final String path;

  private SectionReader(JsonObject json, String path, Set<String> keys) {
    this.json = json;
    this.path = path;
    for (String name : json.fieldNames()) {
      if (!keys.contains(name)) {
        throw ConfigException.unknownKey(key(name));
      }
    }
  }

  static SectionReader of(JsonObject json, String path, Section<?> section) {
    return new SectionReader(json, path, section.names());
  }

  /** A reader of an empty object: every key at its default. */
  static SectionReader empty(String path, Section<?> section) {
    return of(new JsonObject(), path, section);
  }

  /** The nested object {@code name}; an absent one reads as empty so every default applies. */
  SectionReader section(String name, Section<?> section) {
    if (!json.containsKey(name)) {
      return new SectionReader(new JsonObject(), key(name), section.names());
    }
    Object value = json.getValue(name);
    if (!(value instanceof JsonObject)) {
      throw ConfigException.invalid(key(name), value, "an object");
    }
    return new SectionReader((JsonObject) value, key(name), section.names());
  }

  /** The value of {@code key}, read and refused as the key declares. */
  <T> T get(Key<?, T> key) {
    T value = key.read(this);
    if (key.retired() && has(key.name())) {
      LOG.warning(() -> key(key.name()) + " is deprecated and will be refused in a later version: "
          + key.replacement());
    }
    return value;
  }

  String key(String name) {
    return path.isEmpty() ? name : path + "." + name;
  }

  boolean has(String name) {
    return json.containsKey(name);
  }

  Object raw(String name) {
    return json.getValue(name);
  }

  ConfigException invalid(String name, String expectation) {
    return ConfigException.invalid(key(name), raw(name), expectation);
  }

  /** A string passing {@code valid}; {@code defaultValue == null} makes the key required. */
  String text(String name, String defaultValue, Predicate<String> valid, String expectation) {
    if (!has(name)) {
      if (defaultValue == null) {
        throw ConfigException.missing(key(name), expectation);
      }
      return defaultValue;
    }
    Object value = raw(name);
    if (!(value instanceof String) || !valid.test((String) value)) {
      throw invalid(name, expectation);
    }
    return (String) value;
  }

  boolean bool(String name, boolean defaultValue) {
    if (!has(name)) {
      return defaultValue;
    }
    Object value = raw(name);
    if (!(value instanceof Boolean)) {
      throw invalid(name, "true or false");
    }
    return (Boolean) value;
  }

  int integer(String name, int defaultValue, int min, int max) {
    String expectation = max == Integer.MAX_VALUE
        ? "an integer of at least " + min
        : "an integer from " + min + " to " + max;
    return (int) wholeNumber(name, defaultValue, min, max, expectation);
  }

  long wholeNumber(String name, long defaultValue, long min, long max, String expectation) {
    if (!has(name)) {
      return defaultValue;
    }
    BigDecimal value = decimal(raw(name));
    if (value == null
        || value.stripTrailingZeros().scale() > 0
        || value.compareTo(BigDecimal.valueOf(min)) < 0
        || value.compareTo(BigDecimal.valueOf(max)) > 0) {
      throw invalid(name, expectation);
    }
    return value.longValueExact();
  }

  double number(String name, double defaultValue, Predicate<Double> valid, String expectation) {
    if (!has(name)) {
      return defaultValue;
    }
    BigDecimal exact = decimal(raw(name));
    if (exact == null) {
      throw invalid(name, expectation);
    }
    double value = exact.doubleValue();
    if (!Double.isFinite(value) || !valid.test(value)) {
      throw invalid(name, expectation);
    }
    return value;
  }

  JsonArray array(String name, String expectation) {
    if (!has(name)) {
      throw ConfigException.missing(key(name), expectation);
    }
    Object value = raw(name);
    if (!(value instanceof JsonArray)) {
      throw invalid(name, expectation);
    }
    return (JsonArray) value;
  }

  private static BigDecimal decimal(Object value) {
    if (!(value instanceof Number)) {
      return null;
    }
    try {
      return value instanceof BigDecimal ? (BigDecimal) value : new BigDecimal(value.toString());
    } catch (NumberFormatException notFinite) {
      return null;
    }
  }
}
