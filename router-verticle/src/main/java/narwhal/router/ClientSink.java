package narwhal.router;

import narwhal.engines.client.DecodeEnd;
import narwhal.engines.sse.SseEvent;

/**
 * Where a request's decode output goes: an SSE relay for streaming clients, a JSON assembly for the others.
 * The HTTP status is committed only with the first output; a failure before that is an ordinary JSON error,
 * after it (streaming) one terminal error event.
 */
interface ClientSink {
  /** A decode attempt starts: what an uncommitted sink holds of an earlier, failed attempt is dropped. */
  default void attemptStarted() {
  }

  void metadata(SseEvent.Metadata event);

  void output(SseEvent.Output event);

  void complete(DecodeEnd end);

  /** Ends the response with an error: a JSON error when nothing is committed, else the terminal SSE event. */
  void fail(EdgeError error);

  /** Whether the status is committed (output reached the client). */
  boolean committed();

  /** Characters of output delivered. */
  long outputLength();

  /** Backpressure: called with a resume action when the client cannot take more now; false when it can. */
  boolean congested(Runnable resume);
}
