package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * vLLM's OpenAI-compatible JSON bodies: full completion and chat responses, stream chunks
 * (chat chunks omit unset fields, completion chunks carry their nulls), the usage chunk and the
 * in-stream error object.
 */
final class ResponseShapes {

  private ResponseShapes() {
  }

  static JsonObject usage(int promptTokens, int completionTokens, boolean withDetails) {
    JsonObject usage = new JsonObject()
      .put("prompt_tokens", promptTokens)
      .put("total_tokens", promptTokens + completionTokens)
      .put("completion_tokens", completionTokens);
    return withDetails ? usage.put("prompt_tokens_details", null) : usage;
  }

  static JsonObject full(CompletionRequest req, long created, String text, String finishReason,
                         int completionTokens, JsonObject kvTransferParams) {
    JsonObject choice;
    if (req.chat) {
      choice = new JsonObject()
        .put("index", 0)
        .put("message", new JsonObject()
          .put("role", "assistant")
          .put("content", text)
          .put("refusal", null)
          .put("annotations", null)
          .put("audio", null)
          .put("function_call", null)
          .put("tool_calls", new JsonArray())
          .put("reasoning", null))
        .put("logprobs", null)
        .put("finish_reason", finishReason)
        .put("stop_reason", null)
        .put("token_ids", null);
    } else {
      choice = new JsonObject()
        .put("index", 0)
        .put("text", text)
        .put("logprobs", null)
        .put("finish_reason", finishReason)
        .put("stop_reason", null)
        .put("token_ids", null)
        .put("prompt_logprobs", null)
        .put("prompt_token_ids", null);
    }
    JsonObject body = new JsonObject()
      .put("id", req.responseId)
      .put("object", req.chat ? "chat.completion" : "text_completion")
      .put("created", created)
      .put("model", req.model)
      .put("choices", new JsonArray().add(choice))
      .put("service_tier", null)
      .put("system_fingerprint", null)
      .put("usage", usage(req.promptTokens, completionTokens, true));
    if (req.chat) {
      body.put("prompt_logprobs", null).put("prompt_token_ids", null);
    }
    return body.put("kv_transfer_params", kvTransferParams);
  }

  /** Chat's first frame: the assistant role with empty content. */
  static JsonObject roleChunk(CompletionRequest req, long created) {
    return chatChunk(req, created, new JsonObject().put("role", "assistant").put("content", ""), null);
  }

  /** An output (or, with empty text, metadata) chunk; a non-null finish reason marks the last one. */
  static JsonObject outputChunk(CompletionRequest req, long created, String text, String finishReason) {
    if (req.chat) {
      return chatChunk(req, created, new JsonObject().put("content", text), finishReason);
    }
    JsonObject choice = new JsonObject()
      .put("index", 0)
      .put("text", text)
      .put("logprobs", null)
      .put("finish_reason", finishReason)
      .put("stop_reason", null)
      .put("prompt_token_ids", null)
      .put("token_ids", null);
    return new JsonObject()
      .put("id", req.responseId)
      .put("object", "text_completion")
      .put("created", created)
      .put("model", req.model)
      .put("choices", new JsonArray().add(choice))
      .put("usage", null);
  }

  static JsonObject usageChunk(CompletionRequest req, long created, int completionTokens) {
    return new JsonObject()
      .put("id", req.responseId)
      .put("object", req.chat ? "chat.completion.chunk" : "text_completion")
      .put("created", created)
      .put("model", req.model)
      .put("choices", new JsonArray())
      .put("usage", usage(req.promptTokens, completionTokens, false));
  }

  private static JsonObject chatChunk(CompletionRequest req, long created, JsonObject delta, String finishReason) {
    JsonObject choice = new JsonObject()
      .put("index", 0)
      .put("delta", delta)
      .put("logprobs", null)
      .put("finish_reason", finishReason);
    if (finishReason != null) {
      choice.put("stop_reason", null);
    }
    return new JsonObject()
      .put("id", req.responseId)
      .put("object", "chat.completion.chunk")
      .put("created", created)
      .put("model", req.model)
      .put("choices", new JsonArray().add(choice));
  }
}
