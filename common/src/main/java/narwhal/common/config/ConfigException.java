package narwhal.common.config;

import io.vertx.core.json.Json;

/**
 * A fleet file value that Narwhal refuses. The message names the key, the value as it was written
 * and what was expected, so an operator can fix the file without reading code; {@link #key()} lets
 * a hot reload report which key made it keep the last good configuration.
 */
public final class ConfigException extends RuntimeException {

  private final String key;

  public ConfigException(String key, String message) {
    super(message);
    this.key = key;
  }

  /** The dotted key of the refused value, e.g. {@code engines[1].role}; empty for the whole file. */
  public String key() {
    return key;
  }

  static ConfigException invalid(String key, Object value, String expectation) {
    return new ConfigException(key, key + ": " + asJson(value) + " is not valid: expected " + expectation);
  }

  static ConfigException missing(String key, String expectation) {
    return new ConfigException(key, key + ": missing: expected " + expectation);
  }

  static ConfigException unknownKey(String key) {
    return new ConfigException(key, key + ": unknown key");
  }

  static ConfigException malformed(String detail) {
    return new ConfigException("", "malformed JSON: " + detail);
  }

  private static String asJson(Object value) {
    if (value == null) {
      return "null";
    }
    try {
      return Json.encode(value);
    } catch (RuntimeException notEncodable) {
      return String.valueOf(value);
    }
  }
}
