package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;

/**
 * Writes a server-sent-event response the way vLLM does: {@code text/event-stream} headers,
 * {@code data: <json>\n\n} frames, and the {@code data: [DONE]\n\n} terminator.
 */
final class SseWriter {

  private static final Buffer DONE = Buffer.buffer("data: [DONE]\n\n");

  private final HttpServerResponse response;

  SseWriter(HttpServerResponse response) {
    this.response = response;
  }

  /** Sends status 200 and the event-stream headers now. */
  SseWriter open() {
    response.setStatusCode(200)
      .setChunked(true)
      .putHeader("content-type", "text/event-stream; charset=utf-8")
      .putHeader("cache-control", "no-cache");
    response.writeHead();
    return this;
  }

  boolean writable() {
    return !response.closed() && !response.ended();
  }

  Future<Void> frame(JsonObject json) {
    return writable() ? response.write(Buffer.buffer("data: " + json.encode() + "\n\n")) : Future.succeededFuture();
  }

  Future<Void> done() {
    return writable() ? response.write(DONE) : Future.succeededFuture();
  }

  /** Ends the HTTP response cleanly (with or without a preceding [DONE]). */
  Future<Void> end() {
    return writable() ? response.end() : Future.succeededFuture();
  }

  boolean queueFull() {
    return writable() && response.writeQueueFull();
  }
}
