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
 * Relays the consumer's SSE frames to a streaming client as the engine wrote them, bytes untouched but the id. Metadata frames before
 * the first output are held (bounded) and flushed with it, so the 200 is committed only once output exists. The frames
 * relayed in one event-loop turn (all an engine's read delivered) go to the client as one write at the end of that turn:
 * a write and a flush per frame were a third of the relay's CPU when the engine runs ahead of the client. Each frame's
 * {@code id} is the client's ({@link ClientId}), not the decode leg's.
 */
final class SseRelay implements ClientSink {
  private static final int MAX_HELD_FRAMES = 64;
  /** Frames coalesced past this many bytes are written at once (backpressure sees them). */
  private static final int COALESCED_BYTES = 64 * 1024;
  private static final Buffer DONE = Buffer.buffer("data: [DONE]\n\n");

  private final HttpServerResponse response;
  private final EndOfTurn endOfTurn;
  private final byte[] clientId;
  /** The decode engine's id for this attempt, learned from its first frame; null until then. */
  private byte[] engineId;
  private final List<SseFrame> held = new ArrayList<>();
  /** Frames relayed this turn, not yet written; null when none. */
  private Buffer pending;
  private boolean pendingShared;
  private boolean committed;
  private long outputLength;

  /** @param answerId the id the client sees in every chunk ({@link ClientId}) */
  SseRelay(HttpServerResponse response, EndOfTurn endOfTurn, String answerId) {
    this.response = response;
    this.endOfTurn = endOfTurn;
    this.clientId = ClientId.quoted(answerId);
  }

  @Override
  public void attemptStarted() {
    engineId = null;
    if (!committed) held.clear();
  }

  @Override
  public void metadata(SseEvent.Metadata event) {
    if (committed) {
      write(relabel(event.frame()));
    } else if (held.size() < MAX_HELD_FRAMES) {
      held.add(event.frame());
    }
  }

  @Override
  public void output(SseEvent.Output event) {
    if (!committed) commit();
    outputLength += event.text().length();
    write(relabel(event.frame()));
  }

  @Override
  public void complete(DecodeEnd end) {
    writePending();
    if (!response.ended() && !response.closed()) response.end(DONE);
  }

  @Override
  public void fail(EdgeError error) {
    if (!committed) {
      error.send(response);
      return;
    }
    writePending();
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
    if (pending != null && pending.length() >= COALESCED_BYTES) writePending();
    if (!response.writeQueueFull()) return false;
    response.drainHandler(v -> resume.run());
    return true;
  }

  private void commit() {
    committed = true;
    response.setStatusCode(200).setChunked(true).putHeader("content-type", "text/event-stream; charset=utf-8")
        .putHeader("cache-control", "no-cache");
    for (SseFrame frame : held) write(relabel(frame));
    held.clear();
  }

  /** The frame with the client's id in place of the engine's leg id. */
  private Buffer relabel(SseFrame frame) {
    if (engineId == null) {
      Object id = frame.json().getValue("id");
      if (!(id instanceof String s)) return frame.wire();
      engineId = ClientId.quoted(s);
    }
    return ClientId.relabel(frame.wire(), engineId, clientId);
  }

  private void write(Buffer frame) {
    if (response.closed()) return;
    if (pending == null) {
      pending = frame;
      pendingShared = true;
      endOfTurn.add(this::writePending);
    } else {
      if (pendingShared) {
        pending = Buffer.buffer(Math.max(256, 2 * (pending.length() + frame.length()))).appendBuffer(pending);
        pendingShared = false;
      }
      pending.appendBuffer(frame);
    }
  }

  private void writePending() {
    Buffer frames = pending;
    if (frames == null) return;
    pending = null;
    if (!response.closed() && !response.ended()) response.write(frames);
  }
}
