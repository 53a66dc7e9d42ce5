package narwhal.engines.client;

import io.vertx.core.json.JsonObject;

/**
 * One decode leg to make. {@code sameWorker}: the consumer is the producer, so no transfer parameters are
 * sent at all. {@code firstTokenTimeoutMs} is one absolute budget from before the request opens to the first
 * output; {@code readTimeoutMs} bounds silence between chunks after it (0: unbounded here, the caller's
 * deadline bounds the stream).
 */
public record DecodeCall(String consumerUrl, String endpoint, JsonObject clientBody, String model,
                         String requestId, boolean sameWorker, long firstTokenTimeoutMs, long readTimeoutMs) {
}
