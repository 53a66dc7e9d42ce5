package narwhal.engines.client;

import io.vertx.core.json.JsonObject;
import narwhal.engines.connector.HandoffExpectations;

/**
 * One prefill leg to make: the producer, the endpoint the client used, the client's body (never modified),
 * the model to force, the backend request id, the leg's time bound and what the handoff must agree with.
 */
public record PrefillCall(String producerUrl, String endpoint, JsonObject clientBody, String model,
                          String requestId, long timeoutMs, HandoffExpectations expectations) {
}
