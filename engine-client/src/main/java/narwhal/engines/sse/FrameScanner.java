package narwhal.engines.sse;

import narwhal.engines.json.Utf8;

import java.nio.charset.StandardCharsets;

/**
 * The fast reading of one frame's JSON: a single pass over the bytes, with no parser, tree or symbol table, that
 * checks the data is strictly one JSON object (RFC 8259: no comments, no leading zeros, no unescaped control
 * characters, well-formed UTF-8) and reads what the classification needs: the generated text, whether a
 * {@code tool_calls} delta has an element, and the last {@code finish_reason}. It declines ({@link #scan} is false)
 * whatever it cannot read that way: a frame that is not strictly valid, an {@code error} or {@code usage} object, a
 * key written with escapes, deep nesting or long numbers. {@link FrameClassifier} then reads the frame with Jackson,
 * which decides; so both readings agree on every frame (FrameScanTest). One instance per stream.
 */
final class FrameScanner {
  /** Thrown to decline: the frame goes to Jackson. */
  private static final class Decline extends RuntimeException {
    Decline() {
      super(null, null, false, false);
    }
  }

  private static final Decline DECLINE = new Decline();
  private static final int MAX_DEPTH = 256;
  private static final int MAX_NUMBER_LENGTH = 256;
  /** Jackson refuses names past 50,000 characters; the fast reading leaves long ones to it. */
  private static final int MAX_KEY_LENGTH = 1024;

  private static final int OTHER = 0;
  private static final int CHOICES = 1;
  private static final int ERROR_OR_USAGE = 2;
  private static final int TEXT = 3;
  private static final int FINISH_REASON = 4;
  private static final int DELTA = 5;
  private static final int CONTENT = 6;
  private static final int REASONING = 7;
  private static final int REASONING_CONTENT = 8;
  private static final int TOOL_CALLS = 9;

  private static final byte[] K_CHOICES = ascii("choices");
  private static final byte[] K_ERROR = ascii("error");
  private static final byte[] K_USAGE = ascii("usage");
  private static final byte[] K_TEXT = ascii("text");
  private static final byte[] K_FINISH_REASON = ascii("finish_reason");
  private static final byte[] K_DELTA = ascii("delta");
  private static final byte[] K_CONTENT = ascii("content");
  private static final byte[] K_REASONING = ascii("reasoning");
  private static final byte[] K_REASONING_CONTENT = ascii("reasoning_content");
  private static final byte[] K_TOOL_CALLS = ascii("tool_calls");

  private final ChoiceOutput out = new ChoiceOutput();
  private final StringBuilder unescaped = new StringBuilder();

  private byte[] b;
  private int p;
  private int end;
  private int depth;

  /** Reads {@code bytes[from, to)}; true when it could, with {@link #text}, {@link #toolCalls} and {@link #finishReason} set. */
  boolean scan(byte[] bytes, int from, int to) {
    b = bytes;
    p = from;
    end = to;
    depth = 0;
    try {
      out.reset();
      ws();
      expect('{');
      topObject();
      ws();
      return p == end;
    } catch (Decline declined) {
      return false;
    } finally {
      b = null;
    }
  }

  /** The generated text of the frame's choices, in choice order (text, reasoning, content of each). */
  String text() {
    return out.text();
  }

  boolean hasText() {
    return out.hasText();
  }

  boolean toolCalls() {
    return out.toolCalls();
  }

  String finishReason() {
    return out.finishReason();
  }

  String reasoningField() {
    return out.reasoningField();
  }

  private void topObject() {
    if (enteredEmpty('}')) return;
    while (true) {
      int key = key(true);
      switch (key) {
        case CHOICES -> {
          out.reset();
          if (peek() == '[') choices(); else skipValue();
        }
        case ERROR_OR_USAGE -> {
          if (peek() == '{') throw DECLINE;
          skipValue();
        }
        default -> skipValue();
      }
      if (!next('}')) break;
    }
    depth--;
  }

  private void choices() {
    p++;
    if (enteredEmpty(']')) return;
    do {
      ws();
      if (peek() == '{') choice(); else skipValue();
      ws();
    } while (nextInArray());
    depth--;
  }

  private void choice() {
    p++;
    enter();
    out.startChoice();
    ws();
    if (peek() == '}') {
      p++;
    } else {
      while (true) {
        int key = key(false);
        switch (key) {
          case TEXT -> out.choiceText = stringOrSkip();
          case FINISH_REASON -> out.choiceFinish = stringOrSkip();
          case DELTA -> {
            out.resetDelta();
            if (peek() == '{') delta(); else skipValue();
          }
          default -> skipValue();
        }
        if (!next('}')) break;
      }
    }
    depth--;
    out.endChoice();
  }

  private void delta() {
    p++;
    if (enteredEmpty('}')) return;
    while (true) {
      int key = deltaKey();
      switch (key) {
        case REASONING_CONTENT -> out.reasoningContent = stringOrSkip();
        case REASONING -> out.reasoning = stringOrSkip();
        case CONTENT -> out.content = stringOrSkip();
        case TOOL_CALLS -> out.choiceToolCalls = peek() == '[' ? nonEmptyArray() : skipFalse();
        default -> skipValue();
      }
      if (!next('}')) break;
    }
    depth--;
  }

  private boolean skipFalse() {
    skipValue();
    return false;
  }

  /** Skips the array at the cursor; true when it has an element. */
  private boolean nonEmptyArray() {
    p++;
    if (enteredEmpty(']')) return false;
    do {
      ws();
      skipValue();
      ws();
    } while (nextInArray());
    depth--;
    return true;
  }

  /**
   * Reads {@code "name"} then the colon and the whitespace before the value; returns the key's code in its object
   * (top level or choice). A key written with an escape declines: Jackson would read it unescaped.
   */
  private int key(boolean top) {
    int start = keyStart();
    int length = p - 1 - start;
    afterKey();
    if (top) {
      if (is(start, length, K_CHOICES)) return CHOICES;
      if (is(start, length, K_ERROR) || is(start, length, K_USAGE)) return ERROR_OR_USAGE;
      return OTHER;
    }
    if (is(start, length, K_TEXT)) return TEXT;
    if (is(start, length, K_FINISH_REASON)) return FINISH_REASON;
    if (is(start, length, K_DELTA)) return DELTA;
    return OTHER;
  }

  private int deltaKey() {
    int start = keyStart();
    int length = p - 1 - start;
    afterKey();
    if (is(start, length, K_CONTENT)) return CONTENT;
    if (is(start, length, K_REASONING)) return REASONING;
    if (is(start, length, K_REASONING_CONTENT)) return REASONING_CONTENT;
    if (is(start, length, K_TOOL_CALLS)) return TOOL_CALLS;
    return OTHER;
  }

  /** At a key's opening quote (after whitespace): skips the key, returns where its bytes start; escapes decline. */
  private int keyStart() {
    ws();
    expect('"');
    int start = p;
    if (skipStringBody() || p - start > MAX_KEY_LENGTH) throw DECLINE;
    return start;
  }

  private void afterKey() {
    ws();
    expect(':');
    ws();
  }

  private boolean is(int start, int length, byte[] name) {
    if (length != name.length) return false;
    for (int i = 0; i < length; i++) {
      if (b[start + i] != name[i]) return false;
    }
    return true;
  }

  /** After a member: {@code ,} (true: another member follows) or the closing {@code close} (false). */
  private boolean next(char close) {
    ws();
    byte c = at(p++);
    if (c == ',') return true;
    if (c == close) return false;
    throw DECLINE;
  }

  private boolean nextInArray() {
    byte c = at(p++);
    if (c == ',') return true;
    if (c == ']') return false;
    throw DECLINE;
  }

  /** The string value at the cursor, or null (the value skipped) when the value is not a string. */
  private String stringOrSkip() {
    if (peek() != '"') {
      skipValue();
      return null;
    }
    p++;
    int start = p;
    boolean escaped = skipStringBody();
    int stop = p - 1;
    if (!escaped) return decode(start, stop);
    return unescape(start, stop);
  }

  private String decode(int start, int stop) {
    for (int i = start; i < stop; i++) {
      if (b[i] < 0) return new String(b, start, stop - start, StandardCharsets.UTF_8);
    }
    return new String(b, start, stop - start, StandardCharsets.ISO_8859_1);
  }

  /** A validated string body with escapes, unescaped as JSON reads it ({@code \\uXXXX} is one UTF-16 unit). */
  private String unescape(int start, int stop) {
    StringBuilder out = unescaped;
    out.setLength(0);
    int i = start;
    while (i < stop) {
      int run = i;
      while (i < stop && b[i] != '\\') i++;
      if (i > run) out.append(decode(run, i));
      if (i >= stop) break;
      byte e = b[i + 1];
      switch (e) {
        case '"' -> out.append('"');
        case '\\' -> out.append('\\');
        case '/' -> out.append('/');
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        default -> { // 'u', checked by skipStringBody
          out.append((char) (hex(b[i + 2]) << 12 | hex(b[i + 3]) << 8 | hex(b[i + 4]) << 4 | hex(b[i + 5])));
          i += 4;
        }
      }
      i += 2;
    }
    return out.toString();
  }

  /**
   * Skips a string's body from after its opening quote to after its closing one, checking escapes, control
   * characters and UTF-8; true when it contained an escape.
   */
  private boolean skipStringBody() {
    boolean escaped = false;
    while (true) {
      int c = at(p);
      if (c == '"') {
        p++;
        return escaped;
      }
      if (c == '\\') {
        escaped = true;
        escape();
      } else if (c >= 0x20) {
        p++;
      } else if (c >= 0) {
        throw DECLINE; // an unescaped control character
      } else {
        utf8();
      }
    }
  }

  private void escape() {
    byte e = at(p + 1);
    switch (e) {
      case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> p += 2;
      case 'u' -> {
        for (int k = 2; k < 6; k++) hex(at(p + k));
        p += 6;
      }
      default -> throw DECLINE;
    }
  }

  private static int hex(byte c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw DECLINE;
  }

  /** One well-formed multi-byte UTF-8 sequence ({@link Utf8#sequence}). */
  private void utf8() {
    int n = Utf8.sequence(b, p, end);
    if (n == 0) throw DECLINE;
    p += n;
  }

  private void skipValue() {
    byte c = peek();
    switch (c) {
      case '"' -> {
        p++;
        skipStringBody();
      }
      case '{' -> skipObject();
      case '[' -> nonEmptyArray();
      case 't' -> literal("true");
      case 'f' -> literal("false");
      case 'n' -> literal("null");
      default -> number();
    }
  }

  private void skipObject() {
    p++;
    enter();
    ws();
    if (peek() == '}') {
      p++;
    } else {
      do {
        keyStartAllowingEscapes();
        afterKey();
        skipValue();
      } while (next('}'));
    }
    depth--;
  }

  private void keyStartAllowingEscapes() {
    ws();
    expect('"');
    int start = p;
    skipStringBody();
    if (p - start > MAX_KEY_LENGTH) throw DECLINE;
  }

  private void literal(String word) {
    for (int i = 0; i < word.length(); i++) {
      if (at(p + i) != word.charAt(i)) throw DECLINE;
    }
    p += word.length();
    delimiterFollows();
  }

  /** {@code -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?}, then a delimiter. */
  private void number() {
    int start = p;
    if (at(p) == '-') p++;
    byte first = at(p);
    if (first == '0') {
      p++;
    } else if (first >= '1' && first <= '9') {
      digits();
    } else {
      throw DECLINE;
    }
    if (p < end && b[p] == '.') {
      p++;
      if (!isDigit(at(p))) throw DECLINE;
      digits();
    }
    if (p < end && (b[p] == 'e' || b[p] == 'E')) {
      p++;
      if (at(p) == '+' || b[p] == '-') p++;
      if (!isDigit(at(p))) throw DECLINE;
      digits();
    }
    if (p - start > MAX_NUMBER_LENGTH) throw DECLINE;
    delimiterFollows();
  }

  private void digits() {
    while (p < end && isDigit(b[p])) p++;
  }

  private static boolean isDigit(byte c) {
    return c >= '0' && c <= '9';
  }

  /** What follows a number or literal must end it: whitespace, {@code ,}, {@code ]}, {@code }} or the end. */
  private void delimiterFollows() {
    if (p == end) return;
    byte c = b[p];
    if (c == ',' || c == ']' || c == '}' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return;
    throw DECLINE;
  }

  private void enter() {
    if (++depth > MAX_DEPTH) throw DECLINE;
  }

  /** Enters the object or array just opened; true when it is empty, and then left again ({@code close} read). */
  private boolean enteredEmpty(char close) {
    enter();
    ws();
    if (peek() != close) return false;
    p++;
    depth--;
    return true;
  }

  private byte peek() {
    return at(p);
  }

  /** The byte at {@code i} of the frame; past its end the frame is cut short, which declines. */
  private byte at(int i) {
    if (i >= end) throw DECLINE;
    return b[i];
  }

  private void expect(char c) {
    if (p >= end || b[p] != c) throw DECLINE;
    p++;
  }

  private void ws() {
    while (p < end) {
      byte c = b[p];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      p++;
    }
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
