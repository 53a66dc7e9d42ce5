package narwhal.router;

import narwhal.engines.client.DecodeEnd;

/**
 * The client's side of a request, as its {@link RequestLifecycle} ends it: whether output reached the client, how much,
 * and the one ending (the completed answer, or an error: a JSON error when nothing is committed, else the stream's
 * terminal error event). A decode's frames reach it as a {@link ClientSink}; a whole answer as {@link WholeLeg} relays it.
 */
interface ClientEnd {
  /** An attempt starts: what an uncommitted end holds of an earlier, failed attempt is dropped. */
  default void attemptStarted() {
  }

  void complete(DecodeEnd end);

  /** Ends the response with an error: a JSON error when nothing is committed, else the terminal SSE event. */
  void fail(EdgeError error);

  /** Whether the status is committed (output reached the client). */
  boolean committed();

  /** Output delivered: characters of a decode's text, bytes of a whole answer. */
  long outputLength();
}
