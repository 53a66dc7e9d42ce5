package narwhal.router;

import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;

import java.time.Instant;

/**
 * An admitted client request: router id, the client's own id, the endpoint, the validated body (client
 * {@code kv_transfer_params} already removed), whether the client streams, when it arrived, and what keeps it near
 * related requests ({@link PromptAffinity}; null: nothing), and the model or adapter it names (the fleet's top-level
 * {@code model} when it names none), and the tenant it waits and counts as ({@link Admission.Lane}).
 */
record InferenceRequest(String rid, String clientRid, String endpoint, boolean chat, JsonObject body, boolean stream,
                        HttpServerResponse response, Instant arrived, long arrivedNanos, String affinity, String model,
                        Admission.Lane lane) {
}
