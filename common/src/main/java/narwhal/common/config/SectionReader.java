package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Reads the values of one JSON object of the fleet file (the root, a section, an engine entry),
 * applying defaults and refusing anything out of its range with a {@link ConfigException} that
 * names the full key. Keys the object does not declare are refused when the reader is made.
 */
final class SectionReader {

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

  static SectionReader of(JsonObject json, String path, Set<String> keys) {
    return new SectionReader(json, path, keys);
  }

  /** The nested object {@code name}; an absent one reads as empty so every default applies. */
  SectionReader section(String name, Set<String> keys) {
    if (!json.containsKey(name)) {
      return new SectionReader(new JsonObject(), key(name), keys);
    }
    Object value = json.getValue(name);
    if (!(value instanceof JsonObject)) {
      throw ConfigException.invalid(key(name), value, "an object");
    }
    return new SectionReader((JsonObject) value, key(name), keys);
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

  String anyString(String name, String defaultValue) {
    return text(name, defaultValue, s -> true, "a string");
  }

  String nonEmptyString(String name, String defaultValue) {
    return text(name, defaultValue, s -> !s.isBlank(), "a non-empty string");
  }

  String oneOf(String name, String defaultValue, List<String> options) {
    String expectation = "one of " + options.stream().map(o -> "\"" + o + "\"")
        .collect(Collectors.joining(", "));
    return text(name, defaultValue, options::contains, expectation);
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

  double positive(String name, double defaultValue) {
    return number(name, defaultValue, v -> v > 0, "a number greater than 0");
  }

  double nonNegative(String name, double defaultValue) {
    return number(name, defaultValue, v -> v >= 0, "a number of at least 0");
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
