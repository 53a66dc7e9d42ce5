package narwhal.engines.client;

import io.vertx.core.json.JsonObject;
import narwhal.engines.connector.HandoffExpectations;

import java.util.Map;

/**
 * One prefill leg to make: the producer, the endpoint the client used, the client's body (never modified),
 * the model to force, the backend request id, the leg's time bound and what the handoff must agree with;
 * {@code headers} are sent besides the leg's own (the trace context: {@code traceparent}, {@code tracestate}).
 */
public record PrefillCall(String producerUrl, String endpoint, JsonObject clientBody, String model,
                          String requestId, long timeoutMs, HandoffExpectations expectations, Map<String, String> headers) {

  public PrefillCall {
    headers = Map.copyOf(headers);
  }

  public PrefillCall(String producerUrl, String endpoint, JsonObject clientBody, String model,
                     String requestId, long timeoutMs, HandoffExpectations expectations) {
    this(producerUrl, endpoint, clientBody, model, requestId, timeoutMs, expectations, Map.of());
  }
}
