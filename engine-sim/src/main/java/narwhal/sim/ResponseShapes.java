package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * vLLM's OpenAI-compatible JSON bodies: full completion and chat responses (a batched prefill: one choice per prompt,
 * one {@code kv_transfer_params}, the first prompt's, as vLLM's {@code final_res_batch[0]}), stream chunks
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

  /**
   * vLLM's {@code --enable-prompt-tokens-details}: {@code usage.prompt_tokens_details.cached_tokens} when some prompt
   * tokens were not computed (vLLM leaves the field out, or null, when none were).
   */
  static JsonObject withCachedTokens(JsonObject body, int cachedTokens) {
    if (cachedTokens > 0) {
      body.getJsonObject("usage").put("prompt_tokens_details", new JsonObject().put("cached_tokens", cachedTokens));
    }
    return body;
  }

  static JsonObject full(CompletionRequest req, long created, Answer answer, JsonObject kvTransferParams) {
    JsonObject choice;
    if (req.chat) {
      String content = answer.joined(Answer.Kind.CONTENT);
      String reasoning = answer.joined(Answer.Kind.REASONING);
      JsonArray toolCalls = answer.toolCalls();
      choice = new JsonObject()
        .put("index", 0)
        .put("message", new JsonObject()
          .put("role", "assistant")
          .put("content", content == null && (reasoning == null && toolCalls.isEmpty() || !"auto".equals(req.toolChoice))
            ? "" : content)
          .put("refusal", null)
          .put("annotations", null)
          .put("audio", null)
          .put("function_call", null)
          .put("tool_calls", toolCalls)
          .put(answer.reasoningField(), reasoning))
        .put("logprobs", answer.logprobs())
        .put("finish_reason", answer.finishReason())
        .put("stop_reason", answer.stopReason())
        .put("token_ids", req.returnTokenIds ? answer.tokenIds() : null);
    } else {
      choice = new JsonObject()
        .put("index", 0)
        .put("text", answer.joined(Answer.Kind.CONTENT) == null ? "" : answer.joined(Answer.Kind.CONTENT))
        .put("logprobs", answer.logprobs())
        .put("finish_reason", answer.finishReason())
        .put("stop_reason", answer.stopReason())
        .put("token_ids", req.returnTokenIds ? answer.tokenIds() : null)
        .put("prompt_logprobs", answer.promptLogprobs())
        .put("prompt_token_ids", req.returnTokenIds ? answer.promptTokenIds() : null);
    }
    JsonArray choices = new JsonArray().add(choice);
    for (int i = 1; i < req.batch.size(); i++) {
      java.util.List<String> first = Generator.generate(req.batch.get(i), req.seed, req.temperature, 1, false).tokens();
      choices.add(choice.copy().put("index", i).put("text", String.join("", first)).put("logprobs", null));
    }
    JsonObject body = new JsonObject()
      .put("id", req.responseId)
      .put("object", req.chat ? "chat.completion" : "text_completion")
      .put("created", created)
      .put("model", req.model)
      .put("choices", choices)
      .put("service_tier", null)
      .put("system_fingerprint", null)
      .put("usage", usage(req.promptTokens + req.batch.stream().skip(1).mapToInt(Generator::countTokens).sum(),
        answer.completionTokens() * Math.max(1, req.batch.size()), true));
    if (req.chat) {
      body.put("prompt_logprobs", answer.promptLogprobs()).put("prompt_token_ids", req.returnTokenIds ? answer.promptTokenIds() : null);
    }
    return body.put("kv_transfer_params", kvTransferParams);
  }

  /**
   * Chat's first frame: the assistant role with empty content and {@code prompt_token_ids} (null unless asked: vLLM
   * passes it explicitly, so its exclude-unset serialisation keeps it).
   */
  static JsonObject roleChunk(CompletionRequest req, long created, Answer answer) {
    JsonObject chunk = chatChunk(req, created, new JsonObject().put("role", "assistant").put("content", ""), null);
    return chunk.put("prompt_token_ids", req.returnTokenIds ? answer.promptTokenIds() : null);
  }

  /**
   * The chunk of one delta; {@code last} puts the finish and stop reasons on it, {@code first} a completion's
   * prompt token ids (when asked).
   */
  static JsonObject deltaChunk(CompletionRequest req, long created, Answer answer, Answer.Delta delta, boolean first, boolean last) {
    String finish = last ? answer.finishReason() : null;
    if (req.chat) {
      JsonObject chunk = chatChunk(req, created, answer.chatDelta(delta), finish);
      JsonObject choice = chunk.getJsonArray("choices").getJsonObject(0).put("logprobs", answer.logprobs(delta));
      if (last) {
        choice.put("stop_reason", answer.stopReason());
      }
      choice.put("token_ids", req.returnTokenIds ? answer.tokenIds(delta) : null);
      return chunk;
    }
    JsonObject chunk = completionChunk(req, created, delta.text(), finish);
    JsonObject choice = chunk.getJsonArray("choices").getJsonObject(0)
      .put("logprobs", answer.logprobs(delta))
      .put("stop_reason", last ? answer.stopReason() : null);
    if (req.returnTokenIds) {
      choice.put("prompt_token_ids", first ? answer.promptTokenIds() : null).put("token_ids", answer.tokenIds(delta));
    }
    return chunk;
  }

  /** A metadata chunk (no output), or with a finish reason the last chunk of an answer without tokens. */
  static JsonObject outputChunk(CompletionRequest req, long created, String text, String finishReason) {
    if (req.chat) {
      return chatChunk(req, created, new JsonObject().put("content", text), finishReason);
    }
    return completionChunk(req, created, text, finishReason);
  }

  private static JsonObject completionChunk(CompletionRequest req, long created, String text, String finishReason) {
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
