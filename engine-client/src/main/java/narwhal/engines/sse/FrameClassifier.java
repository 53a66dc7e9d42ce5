package narwhal.engines.sse;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.engines.json.StreamingJson;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Classifies one event's data (docs/errors.md), reading each frame once for its {@link FrameUse}. For a relay, the
 * {@link FrameScanner} reads almost every frame in one pass over its bytes; what it declines (frames with an
 * {@code error} or {@code usage} object, anything not strictly valid JSON) is read by one pass of Jackson's streaming
 * parser, which decides: the whole frame is checked to be one JSON object, no tree is built and only the values that
 * matter are read (generated text, {@code tool_calls}, {@code finish_reason}, and the rare {@code error} and
 * {@code usage} objects). For an assembly, Jackson parses the frame into the tree the assembly folds, and the same
 * values are read from that tree. A repeated key counts with its last value, as in a {@link JsonObject}; all three
 * readings give the same event (FrameScanTest). One instance per stream: it keeps scratch state.
 */
final class FrameClassifier {
  private static final byte[] DONE = "[DONE]".getBytes(StandardCharsets.US_ASCII);
  private static final String NOT_AN_OBJECT = "stream frame is not a JSON object";

  private final FrameUse use;
  private final FrameScanner scanner = new FrameScanner();
  private final ChoiceOutput out = new ChoiceOutput();
  private JsonObject error;
  private JsonObject usage;

  FrameClassifier() {
    this(FrameUse.RELAY);
  }

  FrameClassifier(FrameUse use) {
    this.use = use;
  }

  /**
   * Classifies {@code event[offset, offset + length)}, laid out as {@code "data: " + data + "\n\n"}: for a relay by
   * the scanner, else by Jackson; for an assembly by its tree. {@code wire} holds those bytes as a buffer the frame
   * may keep, or is null (they are copied).
   *
   * @throws SseFormatException when the data is neither {@code [DONE]} nor one JSON object
   */
  SseEvent classify(byte[] event, int offset, int length, Buffer wire) {
    if (use == FrameUse.ASSEMBLY) return byTree(event, offset, length, wire);
    SseEvent scanned = byScan(event, offset, length, wire);
    return scanned != null ? scanned : byJackson(event, offset, length, wire);
  }

  SseEvent classify(byte[] event, int length) {
    return classify(event, 0, length, null);
  }

  /** The fast reading; null when the scanner declines the frame. */
  SseEvent byScan(byte[] event, int offset, int length, Buffer wire) {
    int from = offset + SseFrame.PREFIX;
    int to = offset + length - SseFrame.SUFFIX;
    if (isDone(event, from, to)) return SseEvent.Done.INSTANCE;
    if (!scanner.scan(event, from, to)) return null;
    SseFrame frame = new SseFrame(wire(event, offset, length, wire), scanner.finishReason(), null);
    return !scanner.hasText() && !scanner.toolCalls() ? new SseEvent.Metadata(frame) : new SseEvent.Output(frame, scanner.text(), scanner.reasoningField());
  }

  private static Buffer wire(byte[] event, int offset, int length, Buffer wire) {
    return wire != null ? wire : Buffer.buffer(Arrays.copyOfRange(event, offset, offset + length));
  }

  /** The reference reading, by Jackson's streaming parser, of any frame. */
  SseEvent byJackson(byte[] event, int offset, int length, Buffer wire) {
    int from = offset + SseFrame.PREFIX;
    int to = offset + length - SseFrame.SUFFIX;
    if (isDone(event, from, to)) return SseEvent.Done.INSTANCE;
    try (JsonParser parser = StreamingJson.parser(event, from, to - from)) {
      frame(parser);
      if (parser.nextToken() != null) throw new SseFormatException(NOT_AN_OBJECT);
    } catch (IOException e) {
      throw new SseFormatException(NOT_AN_OBJECT);
    }
    if (error != null) return new SseEvent.ErrorFrame(new String(event, from, to - from, StandardCharsets.UTF_8), error);
    SseFrame frame = new SseFrame(wire(event, offset, length, wire), out.finishReason(), usage);
    return out.none() ? new SseEvent.Metadata(frame) : new SseEvent.Output(frame, out.text(), out.reasoningField());
  }

  /**
   * The reading for an assembly: the frame parsed once into its tree by the same parser as {@link #byJackson}, the
   * event read from the tree, which the frame keeps ({@link SseFrame#json()}).
   */
  SseEvent byTree(byte[] event, int offset, int length, Buffer wire) {
    int from = offset + SseFrame.PREFIX;
    int to = offset + length - SseFrame.SUFFIX;
    if (isDone(event, from, to)) return SseEvent.Done.INSTANCE;
    JsonObject json;
    try (JsonParser parser = StreamingJson.parser(event, from, to - from)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) throw new SseFormatException(NOT_AN_OBJECT);
      json = (JsonObject) StreamingJson.readValue(parser);
      if (parser.nextToken() != null) throw new SseFormatException(NOT_AN_OBJECT);
    } catch (IOException e) {
      throw new SseFormatException(NOT_AN_OBJECT);
    }
    if (json.getValue("error") instanceof JsonObject treeError) {
      return new SseEvent.ErrorFrame(new String(event, from, to - from, StandardCharsets.UTF_8), treeError);
    }
    out.reset();
    if (json.getValue("choices") instanceof JsonArray list) {
      for (int i = 0; i < list.size(); i++) {
        if (list.getValue(i) instanceof JsonObject choice) choice(choice);
      }
    }
    JsonObject treeUsage = json.getValue("usage") instanceof JsonObject u ? u : null;
    SseFrame frame = new SseFrame(wire(event, offset, length, wire), out.finishReason(), treeUsage, json);
    return out.none() ? new SseEvent.Metadata(frame) : new SseEvent.Output(frame, out.text(), out.reasoningField());
  }

  /** One choice of a tree, read as {@link #choice(JsonParser)} reads it from tokens. */
  private void choice(JsonObject choice) {
    JsonObject delta = choice.getValue("delta") instanceof JsonObject d ? d : null;
    out.startChoice();
    out.choiceText = choice.getValue("text") instanceof String s ? s : null;
    if (delta != null) {
      out.reasoningContent = delta.getValue("reasoning_content") instanceof String s ? s : null;
      out.reasoning = delta.getValue("reasoning") instanceof String s ? s : null;
      out.content = delta.getValue("content") instanceof String s ? s : null;
      out.choiceToolCalls = delta.getValue("tool_calls") instanceof JsonArray calls && !calls.isEmpty();
    }
    out.choiceFinish = choice.getValue("finish_reason") instanceof String s ? s : null;
    out.endChoice();
  }

  private static boolean isDone(byte[] bytes, int from, int to) {
    while (from < to && (bytes[from] & 0xff) <= ' ') from++;
    while (to > from && (bytes[to - 1] & 0xff) <= ' ') to--;
    return Arrays.equals(bytes, from, to, DONE, 0, DONE.length);
  }

  private void frame(JsonParser parser) throws IOException {
    if (parser.nextToken() != JsonToken.START_OBJECT) throw new SseFormatException(NOT_AN_OBJECT);
    error = null;
    usage = null;
    choices(parser, null);
    String name;
    while ((name = parser.nextFieldName()) != null) {
      JsonToken value = parser.nextToken();
      switch (name) {
        case "error" -> error = object(parser, value);
        case "usage" -> usage = object(parser, value);
        case "choices" -> choices(parser, value);
        default -> { }
      }
      parser.skipChildren();
    }
  }

  private void choices(JsonParser parser, JsonToken value) throws IOException {
    out.reset();
    if (value != JsonToken.START_ARRAY) return;
    for (JsonToken item = parser.nextToken(); item != JsonToken.END_ARRAY; item = parser.nextToken()) {
      if (item == JsonToken.START_OBJECT) {
        choice(parser);
      } else {
        parser.skipChildren();
      }
    }
  }

  private void choice(JsonParser parser) throws IOException {
    out.startChoice();
    String name;
    while ((name = parser.nextFieldName()) != null) {
      JsonToken value = parser.nextToken();
      switch (name) {
        case "text" -> out.choiceText = string(parser, value);
        case "finish_reason" -> out.choiceFinish = string(parser, value);
        case "delta" -> delta(parser, value);
        default -> { }
      }
      parser.skipChildren();
    }
    out.endChoice();
  }

  private void delta(JsonParser parser, JsonToken value) throws IOException {
    out.resetDelta();
    if (value != JsonToken.START_OBJECT) return;
    String name;
    while ((name = parser.nextFieldName()) != null) {
      JsonToken field = parser.nextToken();
      switch (name) {
        case "reasoning_content" -> out.reasoningContent = string(parser, field);
        case "reasoning" -> out.reasoning = string(parser, field);
        case "content" -> out.content = string(parser, field);
        case "tool_calls" -> out.choiceToolCalls = field == JsonToken.START_ARRAY && nonEmptyArray(parser);
        default -> { }
      }
      parser.skipChildren();
    }
  }

  /** Consumes the array the parser is at; true when it has an element. */
  private static boolean nonEmptyArray(JsonParser parser) throws IOException {
    boolean any = false;
    for (JsonToken item = parser.nextToken(); item != JsonToken.END_ARRAY; item = parser.nextToken()) {
      any = true;
      parser.skipChildren();
    }
    return any;
  }

  private static JsonObject object(JsonParser parser, JsonToken value) throws IOException {
    return value == JsonToken.START_OBJECT ? (JsonObject) StreamingJson.readValue(parser) : null;
  }

  private static String string(JsonParser parser, JsonToken value) throws IOException {
    return value == JsonToken.VALUE_STRING ? parser.getText() : null;
  }

}
