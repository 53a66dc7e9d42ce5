package narwhal.engines.sse;

import io.vertx.core.buffer.Buffer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Incremental reader of an engine's SSE stream: fed transport chunks in order, it emits each complete
 * event, classified as output, metadata, error or {@code [DONE]}. Bytes are split on {@code '\n'}, which
 * never occurs inside a multi-byte UTF-8 sequence, so chunk boundaries can fall anywhere. Each chunk is copied
 * out of its buffer once and scanned as an array; an event's data stays bytes, framed for relay as it
 * accumulates, and is classified by {@link FrameClassifier} without building a JSON tree.
 */
public final class SseReader {
  private static final byte[] NONE = new byte[0];
  private static final byte[] DATA_FIELD = "data:".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] FRAME_PREFIX = "data: ".getBytes(StandardCharsets.US_ASCII);

  private static final int INITIAL_EVENT_BYTES = 512;
  /** A stream keeps at most this much room between events, so one large frame does not stay resident. */
  private static final int RETAINED_EVENT_BYTES = 8192;

  private final int maxEventBytes;
  private final Consumer<SseEvent> sink;
  private final FrameClassifier classifier = new FrameClassifier();
  /** Bytes after the last newline, waiting for the rest of their line. */
  private byte[] pending = NONE;
  /** The current event as it will be relayed: {@code "data: "} then its data lines joined by {@code '\n'}. */
  private byte[] event = Arrays.copyOf(FRAME_PREFIX, INITIAL_EVENT_BYTES);
  private int eventLength = SseFrame.PREFIX;
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
        line(bytes, start, end);
        start = i + 1;
      }
    }
    if (bytes.length - start + dataLength() > maxEventBytes) {
      throw new SseFormatException("stream event larger than " + maxEventBytes + " bytes");
    }
    pending = start == bytes.length ? NONE : Arrays.copyOfRange(bytes, start, bytes.length);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private void line(byte[] bytes, int from, int to) {
    if (from == to) {
      if (hasData) dispatch();
      return;
    }
    if (Arrays.equals(bytes, from, Math.min(to, from + DATA_FIELD.length), DATA_FIELD, 0, DATA_FIELD.length)) {
      int value = from + DATA_FIELD.length;
      if (value < to && bytes[value] == ' ') value++;
      if (hasData) newlines(1);
      append(bytes, value, to - value);
      hasData = true;
      if (dataLength() > maxEventBytes) {
        throw new SseFormatException("stream event larger than " + maxEventBytes + " bytes");
      }
    }
  }

  private void dispatch() {
    newlines(SseFrame.SUFFIX);
    byte[] bytes = event;
    int length = eventLength;
    eventLength = SseFrame.PREFIX;
    hasData = false;
    if (bytes.length > RETAINED_EVENT_BYTES) event = Arrays.copyOf(FRAME_PREFIX, INITIAL_EVENT_BYTES);
    sink.accept(classifier.classify(bytes, length));
  }

  private int dataLength() {
    return eventLength - SseFrame.PREFIX;
  }

  private void append(byte[] bytes, int from, int count) {
    ensure(count);
    System.arraycopy(bytes, from, event, eventLength, count);
    eventLength += count;
  }

  private void newlines(int newlines) {
    ensure(newlines);
    for (int i = 0; i < newlines; i++) event[eventLength++] = '\n';
  }

  private void ensure(int more) {
    if (eventLength + more > event.length) event = Arrays.copyOf(event, Math.max(event.length * 2, eventLength + more));
  }
}
