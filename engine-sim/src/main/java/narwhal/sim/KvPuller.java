package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * The consumer side of a NIXL pull: checks a {@code do_remote_prefill} descriptor the way vLLM's
 * scheduler does, then calls the producer's side channel over the network to read and free the
 * blocks. A dead producer or a wrong host/port therefore fails exactly as a network call fails.
 */
final class KvPuller {

  enum Outcome {
    /** The producer had the blocks and released them to us. */
    TRANSFERRED,
    /** Unknown or expired handoff: vLLM recomputes silently. */
    NOT_FOUND,
    /** Descriptor unusable ("Got invalid KVTransferParams"): vLLM recomputes silently. */
    INVALID,
    /** The transfer itself failed (connection, engine id mismatch, producer error). */
    ERROR
  }

  record Result(Outcome outcome, int blocks, String detail) {
  }

  static final long CONNECT_TIMEOUT_MS = 2_000;
  static final long IDLE_TIMEOUT_MS = 5_000;

  private final HttpClient client;

  KvPuller(HttpClient client) {
    this.client = client;
  }

  Future<Result> pull(JsonObject kv) {
    Object engineId = kv.getValue("remote_engine_id");
    Object requestId = kv.getValue("remote_request_id");
    Object host = kv.getValue("remote_host");
    Object port = kv.getValue("remote_port");
    JsonArray blockIds = flatBlockIds(kv.getValue("remote_block_ids"));
    if (!nonEmptyString(engineId) || !nonEmptyString(requestId) || !nonEmptyString(host)
      || !(port instanceof Integer) || (Integer) port < 1 || (Integer) port > 65535 || blockIds == null) {
      return Future.succeededFuture(new Result(Outcome.INVALID, 0, "invalid kv_transfer_params"));
    }
    JsonObject body = new JsonObject()
      .put("remote_engine_id", engineId)
      .put("remote_request_id", requestId)
      .put("block_ids", blockIds);
    RequestOptions request = new RequestOptions()
      .setMethod(HttpMethod.POST)
      .setHost((String) host)
      .setPort((Integer) port)
      .setURI("/kv/pull")
      .setConnectTimeout(CONNECT_TIMEOUT_MS)
      .setIdleTimeout(IDLE_TIMEOUT_MS)
      .putHeader("content-type", "application/json");
    int blocks = blockIds.size();
    return client.request(request)
      .compose(req -> req.send(body.toBuffer()))
      .compose(resp -> resp.body().map(b -> classify(resp.statusCode(), blocks, b.toString())))
      .recover(err -> Future.succeededFuture(new Result(Outcome.ERROR, 0, String.valueOf(err.getMessage()))));
  }

  private static Result classify(int status, int blocks, String body) {
    if (status == 200) {
      return new Result(Outcome.TRANSFERRED, blocks, body);
    }
    if (status == 404) {
      return new Result(Outcome.NOT_FOUND, 0, body);
    }
    return new Result(Outcome.ERROR, 0, "side channel answered " + status + ": " + body);
  }

  private static boolean nonEmptyString(Object value) {
    return value instanceof String && !((String) value).isEmpty();
  }

  /** The ids of a flat {@code [int]} or nested {@code [[int]]} list, or null when malformed or empty. */
  static JsonArray flatBlockIds(Object value) {
    if (!(value instanceof JsonArray) || ((JsonArray) value).isEmpty()) {
      return null;
    }
    JsonArray flat = new JsonArray();
    for (Object item : (JsonArray) value) {
      if (item instanceof JsonArray) {
        for (Object id : (JsonArray) item) {
          if (!validId(id)) {
            return null;
          }
          flat.add(id);
        }
      } else if (validId(item)) {
        flat.add(item);
      } else {
        return null;
      }
    }
    return flat;
  }

  private static boolean validId(Object id) {
    return (id instanceof Integer || id instanceof Long) && ((Number) id).longValue() >= 0;
  }
}
