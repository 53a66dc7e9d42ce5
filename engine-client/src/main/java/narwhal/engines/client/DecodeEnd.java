package narwhal.engines.client;

import io.vertx.core.json.JsonObject;

/** How a valid decode stream ended: the last {@code finish_reason} seen, the usage frame if any, output frames. */
public record DecodeEnd(String finishReason, JsonObject usage, int outputFrames) {
}
