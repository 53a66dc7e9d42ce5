package narwhal.router;

import narwhal.engines.sse.SseEvent;

/**
 * Where a request's decode output goes: an SSE relay for streaming clients, a JSON assembly for the others.
 * The HTTP status is committed only with the first output; a failure before that is an ordinary JSON error,
 * after it (streaming) one terminal error event.
 */
interface ClientSink extends ClientEnd {
  void metadata(SseEvent.Metadata event);

  void output(SseEvent.Output event);

  /**
   * The field the attempt's decode engine names reasoning with, as last seen in its streams (null: not seen yet), for
   * an answer that carries no reasoning to spell out as null as the engine would.
   */
  default void reasoningField(String field) {
  }

  /** The prompt's logprobs the attempt's prefill computed (null: none asked), for the answer to carry. */
  default void promptLogprobs(io.vertx.core.json.JsonArray promptLogprobs) {
  }

  /** Backpressure: called with a resume action when the client cannot take more now; false when it can. */
  boolean congested(Runnable resume);
}
