package narwhal.router;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.sse.SseEvent;
import narwhal.engines.sse.SseFrame;

import java.util.ArrayList;
import java.util.List;

/**
 * Relays the consumer's SSE frames to a streaming client as the engine wrote them, bytes untouched. Metadata frames before
 * the first output are held (bounded) and flushed with it, so the 200 is committed only once output exists.
 */
final class SseRelay implements ClientSink {
  private static final int MAX_HELD_FRAMES = 64;
  private static final Buffer DONE = Buffer.buffer("data: [DONE]\n\n");

  private final HttpServerResponse response;
  private final List<SseFrame> held = new ArrayList<>();
  private boolean committed;
  private long outputLength;

  SseRelay(HttpServerResponse response) {
    this.response = response;
  }

  @Override
  public void metadata(SseEvent.Metadata event) {
    if (committed) {
      write(event.frame().wire());
    } else if (held.size() < MAX_HELD_FRAMES) {
      held.add(event.frame());
    }
  }

  @Override
  public void output(SseEvent.Output event) {
    if (!committed) commit();
    outputLength += event.text().length();
    write(event.frame().wire());
  }

  @Override
  public void complete(DecodeEnd end) {
    if (!response.ended() && !response.closed()) response.end(DONE);
  }

  @Override
  public void fail(EdgeError error) {
    if (!committed) {
      error.send(response);
      return;
    }
    JsonObject event = new JsonObject().put("error", new JsonObject().put("message", error.message())
        .put("type", error.type()).put("code", error.status()));
    if (!response.ended() && !response.closed()) response.end(Buffer.buffer("data: " + event.encode() + "\n\n"));
  }

  @Override
  public boolean committed() {
    return committed;
  }

  @Override
  public long outputLength() {
    return outputLength;
  }

  @Override
  public boolean congested(Runnable resume) {
    if (!response.writeQueueFull()) return false;
    response.drainHandler(v -> resume.run());
    return true;
  }

  private void commit() {
    committed = true;
    response.setStatusCode(200).setChunked(true).putHeader("content-type", "text/event-stream")
        .putHeader("cache-control", "no-cache");
    for (SseFrame frame : held) write(frame.wire());
    held.clear();
  }

  private void write(Buffer frame) {
    if (!response.closed()) response.write(frame);
  }
}
