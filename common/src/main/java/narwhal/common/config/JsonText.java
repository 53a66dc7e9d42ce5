package narwhal.common.config;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Decodes the text of a fleet file, turning the JSON parser's complaint into a short
 * {@link ConfigException} that gives the line and column instead of the parser's internals.
 */
final class JsonText {

  private static final Pattern LOCATION =
      Pattern.compile("\\s*at \\[Source: [^\\n]*?; line: (\\d+), column: (\\d+)\\]\\s*$");
  private static final Pattern NESTED_LOCATION = Pattern.compile("\\s*\\(start marker at \\[[^\\n]*?\\]\\)");
  private static final String VERTX_PREFIX = "Failed to decode:";

  private JsonText() {
  }

  static Object decode(String text) {
    if (text == null || text.isBlank()) {
      throw ConfigException.malformed("the file is empty");
    }
    try {
      return Json.decodeValue(text);
    } catch (DecodeException e) {
      throw ConfigException.malformed(describe(String.valueOf(e.getMessage())));
    }
  }

  private static String describe(String message) {
    String problem = message.startsWith(VERTX_PREFIX) ? message.substring(VERTX_PREFIX.length()) : message;
    Matcher location = LOCATION.matcher(problem);
    String where = "";
    if (location.find()) {
      where = "line " + location.group(1) + ", column " + location.group(2) + ": ";
      problem = problem.substring(0, location.start());
    }
    return where + NESTED_LOCATION.matcher(problem).replaceAll("").trim();
  }
}
