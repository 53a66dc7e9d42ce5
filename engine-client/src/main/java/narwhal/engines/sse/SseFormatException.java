package narwhal.engines.sse;

/** An engine stream that is not well-formed SSE carrying JSON frames. */
public final class SseFormatException extends RuntimeException {
  public SseFormatException(String message) {
    super(message, null, false, false);
  }
}
