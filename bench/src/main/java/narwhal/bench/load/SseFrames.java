package narwhal.bench.load;

/**
 * Classifies one SSE event's data the way docs/errors.md does (output, metadata, error, {@code [DONE]}) without
 * parsing JSON: the load generator shares two cores with what it measures, so it looks for a non-empty
 * {@code text}, {@code content} or {@code reasoning} string, or a non-empty {@code tool_calls} array,
 * inside a frame that has {@code choices}. Escaped quotes inside generated text cannot fake a key
 * ({@code \"text\"} is not {@code "text"} followed by a colon).
 */
public final class SseFrames {
  public enum Kind { OUTPUT, METADATA, ERROR, DONE }

  private static final String[] TEXT_KEYS = {"\"text\"", "\"content\"", "\"reasoning_content\"", "\"reasoning\""};

  private SseFrames() {
  }

  public static Kind classify(String data) {
    String d = data.strip();
    if (d.equals("[DONE]")) return Kind.DONE;
    if (!d.contains("\"choices\"")) return d.contains("\"error\"") ? Kind.ERROR : Kind.METADATA;
    for (String key : TEXT_KEYS) {
      if (nonEmptyValue(d, key, '"')) return Kind.OUTPUT;
    }
    if (nonEmptyValue(d, "\"tool_calls\"", '[')) return Kind.OUTPUT;
    if (d.startsWith("{\"error\"")) return Kind.ERROR;
    return Kind.METADATA;
  }

  /**
   * True when some occurrence of {@code key} is followed by a colon and a value that opens with {@code open}
   * and is not empty ({@code ""} or {@code []}).
   */
  static boolean nonEmptyValue(String d, String key, char open) {
    char close = open == '"' ? '"' : ']';
    int from = 0;
    while (true) {
      int at = d.indexOf(key, from);
      if (at < 0) return false;
      int i = skipSpaces(d, at + key.length());
      from = at + key.length();
      if (i >= d.length() || d.charAt(i) != ':') continue;
      i = skipSpaces(d, i + 1);
      if (i >= d.length() || d.charAt(i) != open) continue;
      i = open == '"' ? i + 1 : skipSpaces(d, i + 1);
      if (i < d.length() && d.charAt(i) != close) return true;
    }
  }

  private static int skipSpaces(String d, int i) {
    while (i < d.length() && Character.isWhitespace(d.charAt(i))) i++;
    return i;
  }
}
