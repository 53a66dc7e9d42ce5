package narwhal.bench.load;

import io.vertx.core.buffer.Buffer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Times one SSE response as a client sees it: fed transport chunks with their arrival time, it splits them
 * into events (chunk boundaries may fall anywhere, {@code \r\n} or {@code \n} line ends), classifies each with
 * {@link SseFrames}, and keeps the arrival of the first body byte, of the first output token, the gap before
 * every later token, the token count, and whether the stream ended with {@code [DONE]} or an error frame.
 * Times are {@link System#nanoTime()} values passed in, so tests drive it without a clock.
 */
public final class SseTimer {
  static final int MAX_EVENT_BYTES = 1 << 20;

  private final long startNanos;
  private byte[] carry = new byte[0];
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private long firstChunkNanos = -1;
  private long firstTokenNanos = -1;
  private long lastTokenNanos = -1;
  private int tokens;
  private int metadataFrames;
  private boolean done;
  private String error;
  private long[] gaps = new long[16];
  private int gapCount;

  public SseTimer(long startNanos) {
    this.startNanos = startNanos;
  }

  /** Consumes one chunk that arrived at {@code nowNanos}. */
  public void feed(Buffer chunk, long nowNanos) {
    feed(chunk.getBytes(), nowNanos);
  }

  public void feed(byte[] chunk, long nowNanos) {
    if (firstChunkNanos < 0 && chunk.length > 0) firstChunkNanos = nowNanos;
    byte[] buf = chunk;
    if (carry.length > 0) {
      buf = Arrays.copyOf(carry, carry.length + chunk.length);
      System.arraycopy(chunk, 0, buf, carry.length, chunk.length);
    }
    int start = 0;
    for (int i = 0; i < buf.length; i++) {
      if (buf[i] == '\n') {
        int end = i > start && buf[i - 1] == '\r' ? i - 1 : i;
        line(buf, start, end, nowNanos);
        start = i + 1;
      }
    }
    int rest = buf.length - start;
    if (rest + data.length() > MAX_EVENT_BYTES) {
      if (error == null) error = "stream event larger than " + MAX_EVENT_BYTES + " bytes";
      carry = new byte[0];
      data.setLength(0);
      return;
    }
    carry = rest == 0 ? new byte[0] : Arrays.copyOfRange(buf, start, buf.length);
  }

  private void line(byte[] buf, int start, int end, long now) {
    if (end == start) {
      if (hasData) {
        String event = data.toString();
        data.setLength(0);
        hasData = false;
        event(event, now);
      }
      return;
    }
    if (end - start >= 5 && buf[start] == 'd' && buf[start + 1] == 'a' && buf[start + 2] == 't' && buf[start + 3] == 'a'
        && buf[start + 4] == ':') {
      int from = start + 5;
      if (from < end && buf[from] == ' ') from++;
      if (hasData) data.append('\n');
      data.append(new String(buf, from, end - from, StandardCharsets.UTF_8));
      hasData = true;
    }
  }

  private void event(String event, long now) {
    switch (SseFrames.classify(event)) {
      case DONE -> done = true;
      case ERROR -> {
        if (error == null) error = event;
      }
      case METADATA -> metadataFrames++;
      case OUTPUT -> token(now);
    }
  }

  /** Records one output token arriving at {@code now} (also used by clients that classify events themselves). */
  public void token(long now) {
    if (firstTokenNanos < 0) {
      firstTokenNanos = now;
    } else {
      if (gapCount == gaps.length) gaps = Arrays.copyOf(gaps, gaps.length * 2);
      gaps[gapCount++] = now - lastTokenNanos;
    }
    lastTokenNanos = now;
    tokens++;
  }

  public long startNanos() {
    return startNanos;
  }

  /** Nanoseconds from start to the first body byte, or -1. */
  public long firstChunk() {
    return firstChunkNanos < 0 ? -1 : firstChunkNanos - startNanos;
  }

  /** Nanoseconds from start to the first output token, or -1. */
  public long firstToken() {
    return firstTokenNanos < 0 ? -1 : firstTokenNanos - startNanos;
  }

  public int tokens() {
    return tokens;
  }

  public int metadataFrames() {
    return metadataFrames;
  }

  public boolean done() {
    return done;
  }

  /** The data of the first error frame (or a framing problem), else null. */
  public String error() {
    return error;
  }

  /** The gaps before the 2nd, 3rd, … token, in nanoseconds. */
  public long[] gaps() {
    return Arrays.copyOf(gaps, gapCount);
  }

  int gapCount() {
    return gapCount;
  }

  long gap(int i) {
    return gaps[i];
  }
}
