package narwhal.router;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.sse.SseEvent;
import narwhal.engines.sse.SseFrame;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Relays the consumer's SSE frames to a streaming client as the engine wrote them, bytes untouched but the id: each
 * frame's {@code id} is the client's ({@link ClientId}), not the decode leg's. Metadata frames before the first output
 * are held (bounded) and flushed with it, so the 200 is committed only once output exists. The frames relayed in one
 * event-loop turn (all an engine's read delivered) go to the client as one write at the end of that turn: a write and
 * a flush per frame were a third of the relay's CPU when the engine runs ahead of the client.
 * <p>
 * A batch of prompts ({@link PromptBatch}) streams through one relay, each prompt's decode through its {@link #part}:
 * its frames interleaved with the others', its choice's {@code index} the prompt's, its own usage chunk dropped for
 * the batch's, summed, written once before {@code [DONE]} as vLLM writes it.
 */
final class SseRelay implements ClientSink {
  private static final int MAX_HELD_FRAMES = 64;
  /** Frames coalesced past this many bytes are written at once (backpressure sees them). */
  private static final int COALESCED_BYTES = 64 * 1024;
  private static final Buffer DONE = Buffer.buffer("data: [DONE]\n\n");
  private static final byte[] INDEX_0 = "\"index\":0".getBytes(StandardCharsets.UTF_8);

  private final HttpServerResponse response;
  private final EndOfTurn endOfTurn;
  private final String answerId;
  private final byte[] clientId;
  private final Part single;
  private final List<Buffer> held = new ArrayList<>();
  /** Frames relayed this turn, not yet written; null when none. */
  private Buffer pending;
  private boolean pendingShared;
  private boolean committed;
  private long outputLength;

  /** @param answerId the id the client sees in every chunk ({@link ClientId}) */
  SseRelay(HttpServerResponse response, EndOfTurn endOfTurn, String answerId) {
    this.response = response;
    this.endOfTurn = endOfTurn;
    this.answerId = answerId;
    this.clientId = ClientId.quoted(answerId);
    this.single = new Part(0, false);
  }

  /** The sink of prompt {@code index} of a batch; {@code onComplete} gets its decode's end, {@code onFail} its error. */
  ClientSink part(int index, java.util.function.Consumer<DecodeEnd> onComplete, java.util.function.Consumer<EdgeError> onFail) {
    Part part = new Part(index, true);
    return new ClientSink() {
      private boolean outputSeen;
      private long length;

      @Override
      public void attemptStarted() {
        part.engineId = null;
      }

      @Override
      public void metadata(SseEvent.Metadata event) {
        if (event.frame().usage() == null) relay(part.relabel(event.frame()), false);
      }

      @Override
      public void output(SseEvent.Output event) {
        outputSeen = true;
        length += event.text().length();
        outputLength += event.text().length();
        relay(part.relabel(event.frame()), true);
      }

      @Override
      public void complete(DecodeEnd end) {
        onComplete.accept(end);
      }

      @Override
      public void fail(EdgeError error) {
        onFail.accept(error);
      }

      @Override
      public boolean committed() {
        return outputSeen;
      }

      @Override
      public long outputLength() {
        return length;
      }

      @Override
      public boolean congested(Runnable resume) {
        return SseRelay.this.congested(resume);
      }
    };
  }

  @Override
  public void attemptStarted() {
    single.engineId = null;
    if (!committed) held.clear();
  }

  @Override
  public void metadata(SseEvent.Metadata event) {
    relay(single.relabel(event.frame()), false);
  }

  @Override
  public void output(SseEvent.Output event) {
    outputLength += event.text().length();
    relay(single.relabel(event.frame()), true);
  }

  @Override
  public void complete(DecodeEnd end) {
    writePending();
    if (!response.ended() && !response.closed()) response.end(DONE);
  }

  /** Ends a batch's stream: its usage chunk ({@code usage} null: the client did not ask), then {@code [DONE]}. */
  void completeBatch(JsonObject usage, long created, String model) {
    if (!committed) commit();
    if (usage != null) {
      write(Buffer.buffer("data: " + new JsonObject().put("id", answerId).put("object", "text_completion").put("created", created)
          .put("model", model).put("choices", new JsonArray()).put("usage", usage).encode() + "\n\n"));
    }
    complete(null);
  }

  @Override
  public void fail(EdgeError error) {
    if (!committed) {
      error.send(response);
      return;
    }
    writePending();
    if (!response.ended() && !response.closed()) response.end(terminalEvent(error));
  }

  /** The event that ends a committed stream with {@code error} (docs/errors.md), with no {@code [DONE]} after it. */
  static Buffer terminalEvent(EdgeError error) {
    JsonObject event = new JsonObject().put("error", new JsonObject().put("message", error.message())
        .put("type", error.type()).put("code", error.status()));
    return Buffer.buffer("data: " + event.encode() + "\n\n");
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

  /** An output frame commits the response; a metadata frame before that is held. */
  private void relay(Buffer frame, boolean output) {
    if (output && !committed) commit();
    if (committed) {
      write(frame);
    } else if (held.size() < MAX_HELD_FRAMES) {
      held.add(frame);
    }
  }

  private void commit() {
    committed = true;
    response.setStatusCode(200).setChunked(true).putHeader("content-type", "text/event-stream; charset=utf-8")
        .putHeader("cache-control", "no-cache");
    for (Buffer frame : held) write(frame);
    held.clear();
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

  /** What one decode's frames become: the client's id for the leg's, and in a batch the prompt's choice index. */
  private final class Part {
    private final byte[] index;
    /** The decode engine's id for the current attempt, learned from its first frame; null until then. */
    private byte[] engineId;

    Part(int index, boolean batch) {
      this.index = batch && index > 0 ? ("\"index\":" + index).getBytes(StandardCharsets.UTF_8) : null;
    }

    Buffer relabel(SseFrame frame) {
      if (engineId == null) {
        Object id = frame.json().getValue("id");
        if (!(id instanceof String s)) return frame.wire();
        engineId = ClientId.quoted(s);
      }
      Buffer out = ClientId.replaceFirst(frame.wire(), engineId, clientId);
      return index == null ? out : ClientId.replaceFirst(out, INDEX_0, index);
    }
  }
}
