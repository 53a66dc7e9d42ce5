package narwhal.engines.sse;

import com.fasterxml.jackson.core.JsonParser;
import io.netty.buffer.ByteBuf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.json.JsonObject;
import narwhal.engines.json.StreamingJson;

import java.io.IOException;

/**
 * An output or metadata event as a relay writes it, {@code data: <the engine's bytes>\n\n}, with what the
 * router records from it: the frame's last {@code finish_reason} and its {@code usage} object (null when absent).
 * The buffer is shared: write it, do not modify it.
 */
public final class SseFrame {
  static final int PREFIX = "data: ".length();
  static final int SUFFIX = "\n\n".length();

  private final Buffer wire;
  private final String finishReason;
  private final JsonObject usage;

  SseFrame(Buffer wire, String finishReason, JsonObject usage) {
    this.wire = wire;
    this.finishReason = finishReason;
    this.usage = usage;
  }

  /** The event framed for a client: {@code data: }, the engine's data bytes, a blank line. */
  public Buffer wire() {
    return wire;
  }

  /** The event's data (JSON text) as the engine sent it. */
  public String data() {
    return wire.getString(PREFIX, wire.length() - SUFFIX);
  }

  /** The event's data parsed from its bytes, as {@code new JsonObject(data())} holds it, without the text in between. */
  public JsonObject json() {
    ByteBuf buf = ((BufferInternal) wire).getByteBuf();
    byte[] bytes = buf.hasArray() ? buf.array() : wire.getBytes();
    int offset = buf.hasArray() ? buf.arrayOffset() + buf.readerIndex() : 0;
    try (JsonParser parser = StreamingJson.parser(bytes, offset + PREFIX, wire.length() - PREFIX - SUFFIX)) {
      parser.nextToken();
      return (JsonObject) StreamingJson.readValue(parser);
    } catch (IOException | ClassCastException e) {
      throw new SseFormatException("stream frame is not a JSON object");
    }
  }

  public String finishReason() {
    return finishReason;
  }

  public JsonObject usage() {
    return usage;
  }
}
