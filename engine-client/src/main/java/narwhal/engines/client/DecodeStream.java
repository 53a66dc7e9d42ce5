package narwhal.engines.client;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;
import narwhal.engines.sse.SseEvent;
import narwhal.engines.sse.FrameUse;
import narwhal.engines.sse.SseFormatException;
import narwhal.engines.sse.SseFrame;
import narwhal.engines.sse.SseReader;

import java.util.concurrent.CancellationException;
import java.util.function.Consumer;

/**
 * A running decode leg (docs/errors.md). Hands each metadata and output event to its handler in order (but the
 * usage chunk a streaming client did not ask for, which the leg asks for to count tokens: it is only recorded), and
 * ends once: {@link #end()} succeeds at {@code [DONE]} after output, or fails with an {@link EngineFault}
 * ({@code [DONE]} before output, EOF or reset before {@code [DONE]}, an error frame, the first-token budget
 * or the between-chunks read timeout running out). Timers and the upstream request die with it.
 */
public final class DecodeStream {
  private final Vertx vertx;
  private final DecodeCall call;
  private final SseReader reader;
  /** The usage chunk is the leg's own (the client did not ask for it): recorded, not handed on. */
  private final boolean dropUsage;
  private final Promise<DecodeEnd> end = Promise.promise();
  private Consumer<SseEvent> handler = e -> { };
  private HttpClientRequest request;
  private HttpClientResponse response;
  private long timer = -1;
  /** {@link System#nanoTime()} of the last chunk once output started: the read timer checks it when it fires. */
  private long lastChunkNanos;
  private int metadataFrames;
  private int outputFrames;
  private String finishReason;
  private JsonObject usage;
  private boolean paused;

  DecodeStream(Vertx vertx, DecodeCall call, int maxEventBytes) {
    this.vertx = vertx;
    this.call = call;
    this.reader = new SseReader(maxEventBytes, call != null ? call.frameUse() : FrameUse.RELAY, this::onEvent);
    this.dropUsage = call != null && !DecodeCall.clientAsksUsage(call.clientBody());
    if (call != null) {
      timer = vertx.setTimer(Math.max(1, call.firstTokenTimeoutMs()), t -> fail(firstTokenTimeout()));
    }
  }

  static DecodeStream failed(Vertx vertx, EngineFault fault) {
    DecodeStream stream = new DecodeStream(vertx, null, 1);
    stream.end.fail(fault);
    return stream;
  }

  /** Receives metadata and output events, in stream order. Error frames and {@code [DONE]} end the stream instead. */
  public DecodeStream handler(Consumer<SseEvent> handler) {
    this.handler = handler;
    return this;
  }

  /** Completes at a valid end of stream; fails with an {@link EngineFault}, or a {@link CancellationException} after {@link #cancel()}. */
  public Future<DecodeEnd> end() {
    return end.future();
  }

  public boolean outputStarted() {
    return outputFrames > 0;
  }

  /** Stops reading from the engine (backpressure); the read timeout keeps running. */
  public void pause() {
    paused = true;
    if (response != null) response.pause();
  }

  public void resume() {
    paused = false;
    if (response != null) response.resume();
  }

  /** Abandons the leg: resets the upstream request and fails {@link #end()} with a cancellation. */
  public void cancel() {
    if (!end.future().isComplete()) finish(new CancellationException("decode leg cancelled"));
  }

  void attach(HttpClientRequest request) {
    this.request = request;
    if (end.future().isComplete()) request.reset();
  }

  void read(HttpClientResponse resp) {
    if (end.future().isComplete()) return;
    this.response = resp;
    if (paused) resp.pause();
    resp.handler(this::onChunk);
    resp.exceptionHandler(err -> fail(eofBeforeDone()));
    resp.endHandler(v -> fail(eofBeforeDone()));
  }

  void fail(EngineFault fault) {
    finish(fault);
  }

  private void onChunk(Buffer chunk) {
    if (end.future().isComplete()) return;
    if (outputFrames > 0) lastChunkNanos = System.nanoTime();
    try {
      reader.feed(chunk);
    } catch (SseFormatException e) {
      fail(new EngineFault(FaultKind.BAD_RESPONSE, Phase.DECODE, "malformed engine stream: " + e.getMessage()));
    }
  }

  private void onEvent(SseEvent event) {
    if (end.future().isComplete()) return;
    if (event instanceof SseEvent.Done) {
      if (outputFrames == 0) {
        fail(new EngineFault(FaultKind.DONE_BEFORE_OUTPUT, Phase.DECODE, "stream ended with [DONE] before any token arrived"));
      } else {
        complete();
      }
    } else if (event instanceof SseEvent.ErrorFrame error) {
      fail(EngineFault.ofStreamError(Phase.DECODE, error.error()));
    } else if (event instanceof SseEvent.Output output) {
      if (outputFrames++ == 0) armReadTimer();
      note(output.frame());
      handler.accept(event);
    } else if (event instanceof SseEvent.Metadata metadata) {
      metadataFrames++;
      note(metadata.frame());
      if (!(dropUsage && metadata.frame().usage() != null)) handler.accept(event);
    }
  }

  private void note(SseFrame frame) {
    if (frame.usage() != null) usage = frame.usage();
    if (frame.finishReason() != null) finishReason = frame.finishReason();
  }

  /**
   * Starts the between-chunks read timeout at the first output. Chunks only record their time; the timer,
   * when it fires, fails the leg if the engine has been silent for the whole timeout, else waits out the rest
   * (re-arming a Vert.x timer per chunk was ~7 % of the relay's CPU).
   */
  private void armReadTimer() {
    cancelTimer();
    lastChunkNanos = System.nanoTime();
    if (call.readTimeoutMs() > 0) timer = vertx.setTimer(call.readTimeoutMs(), t -> readTimerFired());
  }

  private void readTimerFired() {
    timer = -1;
    if (end.future().isComplete()) return;
    long silentMs = (System.nanoTime() - lastChunkNanos) / 1_000_000;
    if (silentMs >= call.readTimeoutMs()) {
      fail(new EngineFault(FaultKind.DECODE_SILENCE, Phase.DECODE,
          "engine went silent between tokens: nothing arrived within the " + SecondsText.of(call.readTimeoutMs()) + "s read timeout"));
    } else {
      timer = vertx.setTimer(call.readTimeoutMs() - silentMs, t -> readTimerFired());
    }
  }

  private EngineFault firstTokenTimeout() {
    String what = metadataFrames == 0 ? "no frames at all" : metadataFrames + " metadata frame(s) but no token";
    return new EngineFault(FaultKind.FIRST_TOKEN_TIMEOUT, Phase.DECODE,
        "no first token within " + SecondsText.of(call.firstTokenTimeoutMs()) + "s: " + what);
  }

  private EngineFault eofBeforeDone() {
    return new EngineFault(FaultKind.EOF_BEFORE_DONE, Phase.DECODE, "stream ended before the [DONE] terminator");
  }

  private void complete() {
    cancelTimer();
    if (end.tryComplete(new DecodeEnd(finishReason, usage, outputFrames))) closeUpstream(false);
  }

  private void finish(Throwable cause) {
    cancelTimer();
    if (end.tryFail(cause)) closeUpstream(true);
  }

  private void closeUpstream(boolean reset) {
    if (response != null) {
      response.handler(null);
      response.exceptionHandler(null);
      response.endHandler(null);
      if (paused) response.resume();
    }
    if (reset && request != null) request.reset();
  }

  private void cancelTimer() {
    if (timer >= 0) {
      vertx.cancelTimer(timer);
      timer = -1;
    }
  }
}
