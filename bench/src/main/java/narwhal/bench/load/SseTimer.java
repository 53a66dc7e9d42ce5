package narwhal.bench.load;

import io.vertx.core.buffer.Buffer;
import narwhal.engines.sse.SseEvent;
import narwhal.engines.sse.SseFormatException;
import narwhal.engines.sse.SseReader;

import java.util.Arrays;

/**
 * Times one SSE response as a client sees it: fed transport chunks with their arrival time, it reads them with
 * engine-client's {@link SseReader} (the reader the router relays with: chunk boundaries anywhere, {@code \r\n} or
 * {@code \n} line ends, each event classified once), and keeps the arrival of the first body byte, of the first
 * output token, the gap before every later token, the token count, and whether the stream ended with
 * {@code [DONE]} or an error frame. An event past {@link #MAX_EVENT_BYTES} or a data line that is not JSON is an
 * error, and the rest of the stream is not read. Times are {@link System#nanoTime()} values passed in, so tests
 * drive it without a clock.
 */
public final class SseTimer {
  static final int MAX_EVENT_BYTES = 1 << 20;

  private final long startNanos;
  private final SseReader reader = new SseReader(MAX_EVENT_BYTES, this::event);
  /** The arrival time of the chunk being read, for the events it completes. */
  private long chunkNanos;
  private boolean broken;
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

  /** Consumes one chunk that arrived at {@code nowNanos}; the chunk must not be modified afterwards. */
  public void feed(Buffer chunk, long nowNanos) {
    if (firstChunkNanos < 0 && chunk.length() > 0) firstChunkNanos = nowNanos;
    if (broken) return;
    chunkNanos = nowNanos;
    try {
      reader.feed(chunk);
    } catch (SseFormatException e) {
      broken = true;
      if (error == null) error = e.getMessage();
    }
  }

  public void feed(byte[] chunk, long nowNanos) {
    feed(Buffer.buffer(chunk), nowNanos);
  }

  private void event(SseEvent event) {
    if (event instanceof SseEvent.Output) {
      token(chunkNanos);
    } else if (event instanceof SseEvent.Metadata) {
      metadataFrames++;
    } else if (event instanceof SseEvent.ErrorFrame frame) {
      if (error == null) error = frame.data();
    } else {
      done = true;
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
