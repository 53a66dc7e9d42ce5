package narwhal.engines.client;

import io.vertx.core.json.JsonObject;

/**
 * Builds the bodies of the two legs from the client's body (docs/vllm.md#what-the-router-sends-and-expects). The client
 * body is never modified: each leg's body is {@link InternalFields#forEngine} of it (a shallow copy without the client's
 * transfer parameters) whose top-level keys are set, its nested values (messages, tools) shared read-only with the
 * client's, as they are only encoded.
 */
final class LegBodies {
  private LegBodies() {
  }

  static JsonObject prefill(JsonObject clientBody, String model) {
    JsonObject body = InternalFields.forEngine(clientBody);
    body.put("model", model);
    body.put("stream", false);
    body.put("max_tokens", 1);
    if (body.containsKey("max_completion_tokens")) body.put("max_completion_tokens", 1);
    body.remove("stream_options");
    body.remove("min_tokens");
    body.remove("min_completion_tokens");
    if (!promptLogprobsAsked(clientBody)) body.remove("prompt_logprobs");
    body.put("kv_transfer_params", new JsonObject().put("do_remote_decode", true).put("do_remote_prefill", false));
    return body;
  }

  static JsonObject decode(JsonObject clientBody, String model, JsonObject descriptor) {
    JsonObject body = InternalFields.forEngine(clientBody);
    body.put("model", model);
    boolean clientStreams = Boolean.TRUE.equals(clientBody.getValue("stream"));
    body.put("stream", true);
    // usage is always asked for (token accounting); a streaming client that did not ask never sees its chunk
    // (DecodeStream drops it). Its other stream_options had no effect without include_usage, so none are kept.
    if (!clientStreams || !DecodeCall.clientAsksUsage(clientBody)) {
      body.put("stream_options", new JsonObject().put("include_usage", true));
    }
    // the prompt's logprobs come from the prefill, which computed the prompt; vLLM refuses them on a stream
    body.remove("prompt_logprobs");
    if (descriptor != null) body.put("kv_transfer_params", descriptor);
    return body;
  }

  /** Whether a non-streaming client asked for {@code prompt_logprobs}: the prefill leg computes and returns them. */
  static boolean promptLogprobsAsked(JsonObject clientBody) {
    return clientBody.getValue("prompt_logprobs") != null && !Boolean.TRUE.equals(clientBody.getValue("stream"));
  }
}
