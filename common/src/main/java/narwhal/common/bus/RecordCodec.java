package narwhal.common.bus;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageCodec;
import io.vertx.core.json.JsonObject;

import java.util.function.Function;

/**
 * The event-bus codec of an immutable message record: its JSON form on the wire, the record itself in a local
 * delivery (no JSON built, copied and read back per message, as a {@code JsonObject} body costs).
 */
public final class RecordCodec<T extends Record> implements MessageCodec<T, T> {
  private final Class<T> type;
  private final Function<T, JsonObject> toJson;
  private final Function<JsonObject, T> fromJson;

  public RecordCodec(Class<T> type, Function<T, JsonObject> toJson, Function<JsonObject, T> fromJson) {
    this.type = type;
    this.toJson = toJson;
    this.fromJson = fromJson;
  }

  /** Makes this the default codec of its record on {@code bus}; a second registration (another instance) is a no-op. */
  public void registerOn(EventBus bus) {
    try {
      bus.registerDefaultCodec(type, this);
    } catch (IllegalStateException alreadyRegistered) {
      // another verticle instance of this node registered it first
    }
  }

  @Override
  public void encodeToWire(Buffer buffer, T record) {
    Buffer json = toJson.apply(record).toBuffer();
    buffer.appendInt(json.length()).appendBuffer(json);
  }

  @Override
  public T decodeFromWire(int pos, Buffer buffer) {
    int length = buffer.getInt(pos);
    return fromJson.apply(new JsonObject(buffer.slice(pos + 4, pos + 4 + length)));
  }

  @Override
  public T transform(T record) {
    return record;
  }

  @Override
  public String name() {
    return "narwhal." + type.getSimpleName();
  }

  @Override
  public byte systemCodecID() {
    return -1;
  }
}
