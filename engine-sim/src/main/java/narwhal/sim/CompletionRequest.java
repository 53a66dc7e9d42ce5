package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.UUID;

/**
 * A validated {@code /v1/completions} or {@code /v1/chat/completions} request: prompt text and
 * its token count, output limit, sampling settings, streaming options, KV handoff parameters and
 * the ids vLLM derives from {@code x-request-id}. Validation failures are {@link ApiError}s with
 * vLLM's messages.
 */
final class CompletionRequest {

  final boolean chat;
  final String path;
  final JsonObject body;
  final String baseId;
  final String responseId;
  final String internalId;
  final String model;
  final String prompt;
  final int promptTokens;
  final int maxTokens;
  final boolean stream;
  final boolean includeUsage;
  final long seed;
  final double temperature;
  final boolean ignoreEos;
  final JsonObject kvParams;
  final String phase;
  final boolean remotePrefill;
  final Object simFault;

  private CompletionRequest(boolean chat, String path, JsonObject body, String headerId, SimEngineOptions options) {
    this.chat = chat;
    this.path = path;
    this.body = body;
    String bodyId = body.getValue("request_id") instanceof String ? body.getString("request_id") : null;
    this.baseId = headerId != null && !headerId.isEmpty() ? headerId
      : bodyId != null ? bodyId : UUID.randomUUID().toString().replace("-", "");
    this.responseId = (chat ? "chatcmpl-" : "cmpl-") + baseId;
    this.internalId = chat ? responseId : responseId + "-0";

    Object modelValue = body.getValue("model");
    if (modelValue != null && !(modelValue instanceof String)) {
      throw ApiError.badRequest("model must be a string", "model");
    }
    if (modelValue != null && !modelValue.equals(options.getModel())) {
      throw ApiError.modelNotFound((String) modelValue);
    }
    this.model = options.getModel();

    this.prompt = chat ? renderMessages(body.getValue("messages")) : promptText(body.getValue("prompt"));
    this.promptTokens = Generator.countTokens(prompt);
    if (promptTokens == 0) {
      throw ApiError.badRequest("The decoder prompt cannot be empty", chat ? "messages" : "prompt");
    }

    Object streamValue = body.getValue("stream");
    if (streamValue != null && !(streamValue instanceof Boolean)) {
      throw ApiError.badRequest("stream must be a boolean", "stream");
    }
    this.stream = Boolean.TRUE.equals(streamValue);
    Object streamOptions = body.getValue("stream_options");
    if (streamOptions != null && !stream) {
      throw ApiError.badRequest("Stream options can only be defined when `stream=True`.", null);
    }
    if (streamOptions != null && !(streamOptions instanceof JsonObject)) {
      throw ApiError.badRequest("stream_options must be an object", "stream_options");
    }
    this.includeUsage = streamOptions != null
      && !Boolean.FALSE.equals(((JsonObject) streamOptions).getValue("include_usage"));

    Object n = body.getValue("n");
    if (n != null && !(n instanceof Integer && (Integer) n == 1)) {
      throw ApiError.badRequest("n must be 1: the simulator generates one sequence per request", "n");
    }
    this.temperature = number(body, "temperature", 1.0);
    if (temperature < 0) {
      throw ApiError.badRequest("temperature must be non-negative, got " + temperature + ".", "temperature");
    }
    this.seed = integer(body, "seed", 0L);
    Object ignore = body.getValue("ignore_eos");
    this.ignoreEos = Boolean.TRUE.equals(ignore);

    String limitKey = chat && body.getValue("max_completion_tokens") != null ? "max_completion_tokens" : "max_tokens";
    Object limit = body.getValue(limitKey);
    if (promptTokens > options.getMaxModelLen()) {
      throw ApiError.badRequest("This model's maximum context length is " + options.getMaxModelLen()
        + " tokens. However, your request has " + promptTokens
        + " input tokens. Please reduce the length of the input messages.", chat ? "messages" : "prompt");
    }
    if (limit == null) {
      this.maxTokens = Math.min(16, options.getMaxModelLen() - promptTokens);
    } else {
      long requested = integer(body, limitKey, 16L);
      if (requested < 1) {
        throw ApiError.badRequest("max_tokens must be at least 1, got " + requested + ".", limitKey);
      }
      if (promptTokens + requested > options.getMaxModelLen()) {
        throw ApiError.badRequest("This model's maximum context length is " + options.getMaxModelLen()
          + " tokens. However, you requested " + (promptTokens + requested) + " tokens (" + promptTokens
          + " in the " + (chat ? "messages" : "prompt") + ", " + requested
          + " in the completion). Please reduce the length of the " + (chat ? "messages" : "prompt")
          + " or completion.", limitKey);
      }
      this.maxTokens = (int) requested;
    }

    Object kv = body.getValue("kv_transfer_params");
    if (kv != null && !(kv instanceof JsonObject)) {
      throw ApiError.badRequest("kv_transfer_params must be an object", "kv_transfer_params");
    }
    this.kvParams = (JsonObject) kv;
    boolean remoteDecode = kvParams != null && Boolean.TRUE.equals(kvParams.getValue("do_remote_decode"));
    this.phase = remoteDecode ? "prefill" : "decode";
    this.remotePrefill = !remoteDecode && kvParams != null
      && Boolean.TRUE.equals(kvParams.getValue("do_remote_prefill"));
    this.simFault = body.getValue("sim_fault");
  }

  static CompletionRequest parse(boolean chat, String path, JsonObject body, String headerId, SimEngineOptions options) {
    return new CompletionRequest(chat, path, body, headerId, options);
  }

  /** Tokens this request may occupy in the KV cache: its prompt plus its output limit. */
  int blocksNeeded(int blockSize) {
    return blocksFor(promptTokens + maxTokens, blockSize);
  }

  static int blocksFor(int tokens, int blockSize) {
    return (tokens + blockSize - 1) / blockSize;
  }

  private static String promptText(Object prompt) {
    if (prompt == null) {
      throw ApiError.badRequest("Either prompt or prompt_embeds must be provided and non-empty.", "prompt");
    }
    if (prompt instanceof String) {
      return (String) prompt;
    }
    if (prompt instanceof JsonArray) {
      JsonArray list = (JsonArray) prompt;
      if (list.size() == 1 && list.getValue(0) instanceof String) {
        return list.getString(0);
      }
      if (!list.isEmpty() && list.stream().allMatch(t -> t instanceof Integer || t instanceof Long)) {
        StringBuilder text = new StringBuilder();
        list.forEach(t -> text.append("t").append(t).append(' '));
        return text.toString();
      }
      if (list.size() > 1 && list.stream().allMatch(t -> t instanceof String)) {
        throw ApiError.badRequest("the simulator serves one prompt per request; got " + list.size(), "prompt");
      }
    }
    throw ApiError.badRequest("prompt must be a string, a list of one string or a list of token ids", "prompt");
  }

  /** The simulated chat template: one {@code "role: content"} line per message. */
  static String renderMessages(Object messages) {
    if (messages == null) {
      throw ApiError.badRequest("Field required: messages", "messages");
    }
    if (!(messages instanceof JsonArray) || ((JsonArray) messages).isEmpty()) {
      throw ApiError.badRequest("messages must be a non-empty list of message objects", "messages");
    }
    StringBuilder text = new StringBuilder();
    for (Object m : (JsonArray) messages) {
      if (!(m instanceof JsonObject) || !(((JsonObject) m).getValue("role") instanceof String)) {
        throw ApiError.badRequest("each message must be an object with a string role", "messages");
      }
      JsonObject message = (JsonObject) m;
      text.append(message.getString("role")).append(": ").append(content(message.getValue("content"))).append('\n');
    }
    return text.toString();
  }

  private static String content(Object content) {
    if (content == null) {
      return "";
    }
    if (content instanceof String) {
      return (String) content;
    }
    if (content instanceof JsonArray) {
      StringBuilder text = new StringBuilder();
      for (Object part : (JsonArray) content) {
        if (part instanceof JsonObject && "text".equals(((JsonObject) part).getValue("type"))
          && ((JsonObject) part).getValue("text") instanceof String) {
          text.append(((JsonObject) part).getString("text")).append(' ');
        } else if (!(part instanceof JsonObject)) {
          throw ApiError.badRequest("message content parts must be objects", "messages");
        }
      }
      return text.toString();
    }
    throw ApiError.badRequest("message content must be a string, a list of parts or null", "messages");
  }

  private static double number(JsonObject body, String key, double def) {
    Object v = body.getValue(key);
    if (v == null) {
      return def;
    }
    if (!(v instanceof Number)) {
      throw ApiError.badRequest(key + " must be a number", key);
    }
    return ((Number) v).doubleValue();
  }

  private static long integer(JsonObject body, String key, long def) {
    Object v = body.getValue(key);
    if (v == null) {
      return def;
    }
    if (!(v instanceof Integer || v instanceof Long)) {
      throw ApiError.badRequest(key + " must be an integer", key);
    }
    return ((Number) v).longValue();
  }
}
