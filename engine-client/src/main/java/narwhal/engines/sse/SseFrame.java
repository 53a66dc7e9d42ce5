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
 * router records from it: the frame's last {@code finish_reason} and its {@code usage} object (null when absent),
 * and, when the stream is read for {@link FrameUse#ASSEMBLY}, the data's JSON tree from that one reading. The buffer
 * and the tree are shared: write and read them, do not modify them.
 */
public final class SseFrame {
  static final int PREFIX = "data: ".length();
  static final int SUFFIX = "\n\n".length();

  private final Buffer wire;
  private final String finishReason;
  private final JsonObject usage;
  /** The data as read for assembly; null when the frame was only scanned. */
  private final JsonObject json;

  SseFrame(Buffer wire, String finishReason, JsonObject usage) {
    this(wire, finishReason, usage, null);
  }

  SseFrame(Buffer wire, String finishReason, JsonObject usage, JsonObject json) {
    this.wire = wire;
    this.finishReason = finishReason;
    this.usage = usage;
    this.json = json;
  }

  /** The event framed for a client: {@code data: }, the engine's data bytes, a blank line. */
  public Buffer wire() {
    return wire;
  }

  /** The event's data (JSON text) as the engine sent it. */
  public String data() {
    return wire.getString(PREFIX, wire.length() - SUFFIX);
  }

  /**
   * The event's data as {@code new JsonObject(data())} holds it: the tree of the frame's one reading when its stream
   * is read for {@link FrameUse#ASSEMBLY}, else parsed from the bytes now, without the text in between.
   */
  public JsonObject json() {
    return json != null ? json : parse();
  }

  private JsonObject parse() {
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
