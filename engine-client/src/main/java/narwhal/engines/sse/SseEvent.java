package narwhal.engines.sse;

import io.vertx.core.json.JsonObject;

/**
 * One server-sent event of an OpenAI-style engine stream, classified (docs/errors.md): generated
 * {@link Output}, {@link Metadata} (role-only, empty or usage-only frames), an in-stream {@link ErrorFrame},
 * or the {@link Done} terminator. Output and metadata carry the event as an {@link SseFrame}, the engine's
 * bytes framed for relay, so a relay forwards them without re-serialising.
 */
public sealed interface SseEvent {

  /**
   * A frame carrying generated text, content, reasoning or a tool-call delta; {@code reasoningField} names the field its
   * reasoning came in ({@code reasoning_content} or {@code reasoning}), null when it carried none.
   */
  record Output(SseFrame frame, String text, String reasoningField) implements SseEvent {
    public Output(SseFrame frame, String text) {
      this(frame, text, null);
    }
  }

  /** A frame carrying no generated output: role deltas, empty deltas, usage-only frames. */
  record Metadata(SseFrame frame) implements SseEvent {}

  /** {@code data: {"error": {...}}} inside a stream. */
  record ErrorFrame(String data, JsonObject error) implements SseEvent {}

  /** {@code data: [DONE]}. */
  record Done() implements SseEvent {
    public static final Done INSTANCE = new Done();
  }
}
