package narwhal.engines.sse;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Incremental reader of an engine's SSE stream: fed transport chunks in order, it emits each complete
 * event, classified as output, metadata, error or {@code [DONE]}. Bytes are split on {@code '\n'}, which
 * never occurs inside a multi-byte UTF-8 sequence, so chunk boundaries can fall anywhere. Each chunk is copied
 * out of its buffer once and scanned as an array (per-byte buffer reads dominated the relay's profile).
 */
public final class SseReader {
  private final int maxEventBytes;
  private final Consumer<SseEvent> sink;
  private static final byte[] NONE = new byte[0];
  /** Bytes after the last newline, waiting for the rest of their line. */
  private byte[] pending = NONE;
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;

  public SseReader(int maxEventBytes, Consumer<SseEvent> sink) {
    this.maxEventBytes = maxEventBytes;
    this.sink = sink;
  }

  /**
   * Consumes one transport chunk.
   *
   * @throws SseFormatException when an event exceeds the size bound or a data line is not JSON
   */
  public void feed(Buffer chunk) {
    byte[] fresh = chunk.getBytes();
    byte[] bytes = pending.length == 0 ? fresh : concat(pending, fresh);
    int start = 0;
    for (int i = 0; i < bytes.length; i++) {
      if (bytes[i] == '\n') {
        int end = i > start && bytes[i - 1] == '\r' ? i - 1 : i;
        line(new String(bytes, start, end - start, StandardCharsets.UTF_8));
        start = i + 1;
      }
    }
    if (bytes.length - start + data.length() > maxEventBytes) {
      throw new SseFormatException("stream event larger than " + maxEventBytes + " bytes");
    }
    pending = start == bytes.length ? NONE : Arrays.copyOfRange(bytes, start, bytes.length);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private void line(String line) {
    if (line.isEmpty()) {
      if (hasData) {
        String event = data.toString();
        data.setLength(0);
        hasData = false;
        sink.accept(classify(event));
      }
      return;
    }
    if (line.startsWith("data:")) {
      if (hasData) data.append('\n');
      data.append(line, line.length() > 5 && line.charAt(5) == ' ' ? 6 : 5, line.length());
      hasData = true;
      if (data.length() > maxEventBytes) {
        throw new SseFormatException("stream event larger than " + maxEventBytes + " bytes");
      }
    }
  }

  /** Classifies one event's data (CONTRACT §3). */
  public static SseEvent classify(String data) {
    if ("[DONE]".equals(data.trim())) return SseEvent.Done.INSTANCE;
    JsonObject frame;
    try {
      frame = new JsonObject(data);
    } catch (DecodeException | ClassCastException e) {
      throw new SseFormatException("stream frame is not a JSON object");
    }
    Object error = frame.getValue("error");
    if (error instanceof JsonObject err) return new SseEvent.ErrorFrame(data, err);
    String text = outputText(frame);
    return text.isEmpty() && !hasToolCalls(frame) ? new SseEvent.Metadata(data, frame) : new SseEvent.Output(data, frame, text);
  }

  /** The generated text a frame carries: completions' {@code text}, chat's content and reasoning deltas. */
  public static String outputText(JsonObject frame) {
    if (!(frame.getValue("choices") instanceof JsonArray choices)) return "";
    StringBuilder out = new StringBuilder();
    for (Object c : choices) {
      if (!(c instanceof JsonObject choice)) continue;
      appendString(out, choice.getValue("text"));
      if (choice.getValue("delta") instanceof JsonObject delta) {
        appendString(out, delta.getValue("reasoning_content"));
        appendString(out, delta.getValue("reasoning"));
        appendString(out, delta.getValue("content"));
      }
    }
    return out.toString();
  }

  private static boolean hasToolCalls(JsonObject frame) {
    if (!(frame.getValue("choices") instanceof JsonArray choices)) return false;
    for (Object c : choices) {
      if (c instanceof JsonObject choice && choice.getValue("delta") instanceof JsonObject delta
          && delta.getValue("tool_calls") instanceof JsonArray calls && !calls.isEmpty()) {
        return true;
      }
    }
    return false;
  }

  private static void appendString(StringBuilder out, Object value) {
    if (value instanceof String s) out.append(s);
  }
}
