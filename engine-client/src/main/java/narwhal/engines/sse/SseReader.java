package narwhal.engines.sse;

import io.netty.buffer.ByteBuf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Incremental reader of an engine's SSE stream: fed transport chunks in order, it emits each complete
 * event, classified as output, metadata, error or {@code [DONE]}. Bytes are split on {@code '\n'}, which
 * never occurs inside a multi-byte UTF-8 sequence, so chunk boundaries can fall anywhere. A chunk that is exactly
 * one single-line event (what vLLM writes per token) is classified in place and relayed as that chunk, no byte
 * copied; other chunks are copied out of their buffer once and scanned as an array, an event's data framed for
 * relay as it accumulates. {@link FrameClassifier} reads each event once, for the stream's {@link FrameUse}: without
 * building a JSON tree for a relay, into the tree the answer is assembled from for an assembly.
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
  private final FrameClassifier classifier;
  /** Bytes after the last newline, waiting for the rest of their line. */
  private byte[] pending = NONE;
  /** The current event as it will be relayed: {@code "data: "} then its data lines joined by {@code '\n'}. */
  private byte[] event = Arrays.copyOf(FRAME_PREFIX, INITIAL_EVENT_BYTES);
  private int eventLength = SseFrame.PREFIX;
  private boolean hasData;

  /** A reader for a relay ({@link FrameUse#RELAY}). */
  public SseReader(int maxEventBytes, Consumer<SseEvent> sink) {
    this(maxEventBytes, FrameUse.RELAY, sink);
  }

  public SseReader(int maxEventBytes, FrameUse use, Consumer<SseEvent> sink) {
    this.maxEventBytes = maxEventBytes;
    this.classifier = new FrameClassifier(use);
    this.sink = sink;
  }

  /**
   * Consumes one transport chunk. An event may keep the chunk as its relayed bytes: do not modify a chunk once fed.
   *
   * @throws SseFormatException when an event exceeds the size bound or a data line is not JSON
   */
  public void feed(Buffer chunk) {
    if (pending.length == 0 && !hasData && wholeEvent(chunk)) return;
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

  /** A chunk that is {@code data: <one line>\n\n} and nothing else is dispatched as it is; false for any other chunk. */
  private boolean wholeEvent(Buffer chunk) {
    if (!(chunk instanceof BufferInternal internal)) return false;
    ByteBuf buf = internal.getByteBuf();
    int length = buf.readableBytes();
    if (!buf.hasArray() || length < FRAME_PREFIX.length + SseFrame.SUFFIX || length - FRAME_PREFIX.length - SseFrame.SUFFIX > maxEventBytes) {
      return false;
    }
    byte[] bytes = buf.array();
    int from = buf.arrayOffset() + buf.readerIndex();
    int end = from + length;
    if (bytes[end - 1] != '\n' || bytes[end - 2] != '\n'
        || !Arrays.equals(bytes, from, from + FRAME_PREFIX.length, FRAME_PREFIX, 0, FRAME_PREFIX.length)) {
      return false;
    }
    for (int i = from + FRAME_PREFIX.length; i < end - SseFrame.SUFFIX; i++) {
      if (bytes[i] == '\n' || bytes[i] == '\r') return false;
    }
    sink.accept(classifier.classify(bytes, from, length, chunk));
    return true;
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
