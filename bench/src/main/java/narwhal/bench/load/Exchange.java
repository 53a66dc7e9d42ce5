package narwhal.bench.load;

/**
 * One request as the load generator saw it: when it started and ended ({@link System#nanoTime()}), how it
 * ended, the HTTP status (0 when none arrived), the router's {@code x-request-id}, the first-token time
 * (nanoseconds from start, -1 when no token came), tokens received, the gaps between tokens, and a detail
 * line for failures.
 */
public record Exchange(long startNanos, long endNanos, Outcome outcome, int status, String rid, long firstToken,
                       int tokens, long[] gaps, String detail) {

  /** How a request ended, from the client's side. */
  public enum Outcome {
    /** 200 and a complete answer ({@code [DONE]} for a stream). */
    OK,
    /** An HTTP status other than 200. */
    HTTP_ERROR,
    /** Connect failure, reset or close before any response. */
    TRANSPORT_ERROR,
    /** 200, then an error frame in the stream. */
    STREAM_ERROR,
    /** 200, then the stream ended without {@code [DONE]}. */
    NO_DONE,
    /** No end within the client's own bound: a hung request. */
    TIMEOUT,
    /** The client hung up on purpose. */
    CANCELLED
  }

  static Exchange of(SseTimer timer, long end, Outcome outcome, int status, String rid, String detail) {
    return new Exchange(timer.startNanos(), end, outcome, status, rid, timer.firstToken(), timer.tokens(), timer.gaps(), detail);
  }

  static Exchange failed(long start, long end, Outcome outcome, int status, String rid, String detail) {
    return new Exchange(start, end, outcome, status, rid, -1, 0, new long[0], detail);
  }

  public long latency() {
    return endNanos - startNanos;
  }

  public boolean ok() {
    return outcome == Outcome.OK;
  }
}
