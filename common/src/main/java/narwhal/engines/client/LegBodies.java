package narwhal.engines.client;

import io.vertx.core.json.JsonObject;

/** Builds the bodies of the two legs from the client's body (docs/vllm.md#what-the-router-sends-and-expects). The client body is never modified. */
final class LegBodies {
  private LegBodies() {
  }

  static JsonObject prefill(JsonObject clientBody, String model) {
    JsonObject body = clientBody.copy();
    body.put("model", model);
    body.put("stream", false);
    body.put("max_tokens", 1);
    if (body.containsKey("max_completion_tokens")) body.put("max_completion_tokens", 1);
    body.remove("stream_options");
    body.remove("min_tokens");
    body.remove("min_completion_tokens");
    body.put("kv_transfer_params", new JsonObject().put("do_remote_decode", true).put("do_remote_prefill", false));
    return body;
  }

  static JsonObject decode(JsonObject clientBody, String model, JsonObject descriptor) {
    JsonObject body = clientBody.copy();
    body.put("model", model);
    boolean clientStreams = Boolean.TRUE.equals(clientBody.getValue("stream"));
    body.put("stream", true);
    if (!clientStreams) body.put("stream_options", new JsonObject().put("include_usage", true));
    body.remove("kv_transfer_params");
    if (descriptor != null) body.put("kv_transfer_params", descriptor);
    return body;
  }
}
