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
  /** vLLM's {@code max_tokens} of a completions request that sets none. */
  static final int COMPLETION_DEFAULT_MAX_TOKENS = 16;
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
  /** Tool names to call, in order (empty: answer with text); from {@code tools} and {@code tool_choice}. */
  final java.util.List<String> toolCalls;
  /** {@code auto} (also when absent), {@code required} or {@code named}: vLLM's finish reason and content depend on it. */
  final String toolChoice;
  /** Top alternatives per token when logprobs were asked, else -1 (chat {@code top_logprobs}, completions {@code logprobs}). */
  final int logprobs;
  /**
   * vLLM's {@code prompt_logprobs}: alternatives per prompt token besides the prompt's own ({@code -1}: the
   * simulator's whole vocabulary, {@link #ALL_PROMPT_LOGPROBS}); null when not asked.
   */
  final Integer promptLogprobs;
  /** The alternatives {@code prompt_logprobs: -1} stands for: the simulated vocabulary's size is not modelled. */
  static final int ALL_PROMPT_LOGPROBS = 20;
  /** vLLM's {@code min_tokens}: 0 when not asked. */
  final long minTokens;
  final java.util.List<String> stop;
  final boolean returnTokenIds;
  /** False when {@code chat_template_kwargs.enable_thinking} is false (Qwen3's switch): no reasoning then. */
  final boolean thinking;
  /**
   * A completions prefill of several prompts (a list of strings or of token lists), each as text; empty otherwise.
   * {@link #prompt} is the first: vLLM answers such a batch with one {@code kv_transfer_params}, the first prompt's.
   */
  final java.util.List<String> batch;

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
    if (modelValue != null && !options.serves((String) modelValue)) {
      throw ApiError.modelNotFound((String) modelValue);
    }
    this.model = options.answerModel((String) modelValue);

    this.batch = chat ? java.util.List.of() : batchTexts(body);
    this.prompt = chat ? renderMessages(body.getValue("messages"))
      : batch.isEmpty() ? promptText(body.getValue("prompt")) : batch.get(0);
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
    // vLLM: include_usage defaults to true; null (None) and false ask for no usage chunk
    JsonObject usageOptions = (JsonObject) streamOptions;
    this.includeUsage = usageOptions != null && (!usageOptions.containsKey("include_usage")
      || usageOptions.getValue("include_usage") != null && !Boolean.FALSE.equals(usageOptions.getValue("include_usage")));

    Object n = body.getValue("n");
    if (n != null && !Long.valueOf(1).equals(laxInteger(n))) {
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
    // vLLM's CompletionRequest defaults max_tokens to 16 (protocol.py); chat's default is what the context leaves (0: none)
    long requested = limit == null ? (chat ? 0 : COMPLETION_DEFAULT_MAX_TOKENS) : integer(body, limitKey, 16L);
    if (limit != null && requested < 1) {
      throw ApiError.badRequest("max_tokens must be at least 1, got " + requested + ".", limitKey);
    }
    ContextLength.check(options.getMaxModelLen(), limitKey, requested, promptTokens, tokenPrompt(body));
    if (limit == null && chat && options.getMaxModelLen() - promptTokens < 1) {
      // vLLM derives the limit the context leaves (get_max_tokens): 0 here, which its sampling check refuses
      throw ApiError.badRequest("max_tokens must be at least 1, got 0.", "max_tokens");
    }
    this.maxTokens = limit == null && chat ? Math.min(16, options.getMaxModelLen() - promptTokens) : (int) requested;
    this.minTokens = integer(body, "min_tokens", 0L);
    if (minTokens < 0) {
      throw ApiError.badRequest("min_tokens must be greater than or equal to 0, got " + minTokens + ".", null);
    }
    if (limit != null && minTokens > requested) {
      throw ApiError.badRequest("min_tokens must be less than or equal to max_tokens=" + requested + ", got " + minTokens + ".", null);
    }
    this.promptLogprobs = promptLogprobs(body, stream);

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
    this.toolCalls = chat ? toolCalls(body) : java.util.List.of();
    Object choice = body.getValue("tool_choice");
    this.toolChoice = choice instanceof JsonObject ? "named" : "required".equals(choice) ? "required" : "auto";
    this.logprobs = logprobs(chat, body);
    this.stop = stopStrings(body.getValue("stop"));
    Object tokenIds = body.getValue("return_token_ids");
    if (tokenIds != null && !(tokenIds instanceof Boolean)) {
      throw ApiError.badRequest("return_token_ids must be a boolean", "return_token_ids");
    }
    this.returnTokenIds = Boolean.TRUE.equals(tokenIds);
    Object kwargs = body.getValue("chat_template_kwargs");
    this.thinking = !(kwargs instanceof JsonObject && Boolean.FALSE.equals(((JsonObject) kwargs).getValue("enable_thinking")));
  }

  /**
   * The calls a tool-calling model makes: none without {@code tools} or with {@code tool_choice: "none"}; the named
   * function for a named {@code tool_choice}; else the first tool, and the second in parallel when the request lists
   * two or more tools and does not set {@code parallel_tool_calls: false}.
   */
  private static java.util.List<String> toolCalls(JsonObject body) {
    Object tools = body.getValue("tools");
    if (tools == null) {
      return java.util.List.of();
    }
    if (!(tools instanceof JsonArray)) {
      throw ApiError.badRequest("tools must be a list of tool objects", "tools");
    }
    java.util.List<String> names = new java.util.ArrayList<>();
    for (Object tool : (JsonArray) tools) {
      Object fn = tool instanceof JsonObject ? ((JsonObject) tool).getValue("function") : null;
      Object name = fn instanceof JsonObject ? ((JsonObject) fn).getValue("name") : null;
      if (!(name instanceof String) || ((String) name).isEmpty()) {
        throw ApiError.badRequest("each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
      }
      names.add((String) name);
    }
    Object choice = body.getValue("tool_choice");
    if (names.isEmpty() || "none".equals(choice)) {
      return java.util.List.of();
    }
    if (choice instanceof JsonObject) {
      Object fn = ((JsonObject) choice).getValue("function");
      Object name = fn instanceof JsonObject ? ((JsonObject) fn).getValue("name") : null;
      if (!names.contains(name)) {
        throw ApiError.badRequest("tool_choice names a function that is not in tools: " + name, "tool_choice");
      }
      return java.util.List.of((String) name);
    }
    boolean parallel = !Boolean.FALSE.equals(body.getValue("parallel_tool_calls")) && names.size() >= 2;
    return parallel ? names.subList(0, 2) : names.subList(0, 1);
  }

  /**
   * vLLM's checks of {@code prompt_logprobs} (its request model's {@code check_logprobs}): an integer, not asked of a
   * streamed request (0 is allowed there: it asks for nothing beyond the prompt token), and positive or -1.
   */
  private static Integer promptLogprobs(JsonObject body, boolean stream) {
    Object v = body.getValue("prompt_logprobs");
    if (v == null) {
      return null;
    }
    Long asked = v instanceof Number ? laxInteger(v) : null;
    if (asked == null) {
      throw ApiError.badRequest("`prompt_logprobs` must be an integer.", "prompt_logprobs");
    }
    if (stream && (asked > 0 || asked == -1)) {
      throw ApiError.badRequest("`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs");
    }
    if (asked < 0 && asked != -1) {
      throw ApiError.badRequest("`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs");
    }
    return asked == -1 ? ALL_PROMPT_LOGPROBS : (int) Math.min(asked, ALL_PROMPT_LOGPROBS);
  }

  private static int logprobs(boolean chat, JsonObject body) {
    if (chat) {
      Object asked = body.getValue("logprobs");
      if (asked != null && !(asked instanceof Boolean)) {
        throw ApiError.badRequest("logprobs must be a boolean", "logprobs");
      }
      long top = integer(body, "top_logprobs", 0L);
      if (top < 0 || top > 20) {
        throw ApiError.badRequest("top_logprobs must be between 0 and 20, got " + top + ".", "top_logprobs");
      }
      if (top > 0 && !Boolean.TRUE.equals(asked)) {
        throw ApiError.badRequest("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs");
      }
      return Boolean.TRUE.equals(asked) ? (int) top : -1;
    }
    if (body.getValue("logprobs") == null) {
      return -1;
    }
    long top = integer(body, "logprobs", 0L);
    if (top < 0 || top > 20) {
      throw ApiError.badRequest("logprobs must be between 0 and 20, got " + top + ".", "logprobs");
    }
    return (int) top;
  }

  private static java.util.List<String> stopStrings(Object stop) {
    if (stop == null) {
      return java.util.List.of();
    }
    if (stop instanceof String) {
      return ((String) stop).isEmpty() ? java.util.List.of() : java.util.List.of((String) stop);
    }
    if (stop instanceof JsonArray && ((JsonArray) stop).stream().allMatch(s -> s instanceof String)) {
      return ((JsonArray) stop).stream().map(String.class::cast).filter(s -> !s.isEmpty()).toList();
    }
    throw ApiError.badRequest("stop must be a string or a list of strings", "stop");
  }

  /**
   * The prompts of a batched completions prefill ({@code kv_transfer_params.do_remote_decode}, not streamed) as texts;
   * empty for one prompt. Any other batch is refused, as before: the simulator decodes one prompt per request.
   */
  private static java.util.List<String> batchTexts(JsonObject body) {
    if (!(body.getValue("prompt") instanceof JsonArray list) || list.size() < 2
      || !list.stream().allMatch(p -> p instanceof String || p instanceof JsonArray)) {
      return java.util.List.of();
    }
    boolean prefill = body.getValue("kv_transfer_params") instanceof JsonObject kv && Boolean.TRUE.equals(kv.getValue("do_remote_decode"));
    if (!prefill || Boolean.TRUE.equals(body.getValue("stream"))) {
      throw ApiError.badRequest("the simulator serves a batch of prompts only as a prefill; got " + list.size(), "prompt");
    }
    java.util.List<String> texts = new java.util.ArrayList<>();
    for (Object p : list) {
      texts.add(promptText(p));
    }
    return texts;
  }

  /** A completions prompt given as token ids: vLLM counts it exactly instead of tokenizing a truncated text. */
  private static boolean tokenPrompt(JsonObject body) {
    return body.getValue("prompt") instanceof JsonArray && !((JsonArray) body.getValue("prompt")).isEmpty()
      && ((JsonArray) body.getValue("prompt")).stream().allMatch(t -> t instanceof Integer || t instanceof Long);
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
    if (v instanceof Boolean) {
      return ((Boolean) v) ? 1.0 : 0.0;
    }
    if (v instanceof String) {
      // Python's float(): decimal or exponent form, underscores between digits, inf/infinity/nan
      String text = ((String) v).strip().toLowerCase(java.util.Locale.ROOT);
      if (!LAX_FLOAT.matcher(text).matches()) {
        throw ApiError.badRequest(key + " must be a number", key);
      }
      String plain = text.replace("_", "");
      return plain.endsWith("nan") ? Double.NaN : plain.endsWith("inf") || plain.endsWith("infinity")
        ? (plain.startsWith("-") ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY) : Double.parseDouble(plain);
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
    Long coerced = laxInteger(v);
    if (coerced == null) {
      throw ApiError.badRequest(key + " must be an integer", key);
    }
    return coerced;
  }

  /** Python's {@code float()} string (lower-cased): decimal or exponent form, underscores between digits, inf/nan. */
  private static final java.util.regex.Pattern LAX_FLOAT = java.util.regex.Pattern.compile(
    "[+-]?(?:(?:\\d+(?:_\\d+)*)?\\.?\\d+(?:_\\d+)*|\\d+(?:_\\d+)*\\.)(?:e[+-]?\\d+(?:_\\d+)*)?|[+-]?(?:inf|infinity|nan)");
  /** Pydantic's integer string: digits (underscores between them), an optional sign, a fraction of zeros only. */
  private static final java.util.regex.Pattern LAX_INTEGER = java.util.regex.Pattern.compile("([+-]?)(\\d{1,18}(?:_\\d+)*)(?:\\.0+)?");

  /**
   * Pydantic's lax integer: an integer, a boolean ({@code true} is 1), an integral float ({@code 8.0}) or a decimal
   * string ({@code "8"}, {@code "8.0"}, {@code "1_000"}); else null.
   */
  static Long laxInteger(Object v) {
    if (v instanceof Integer || v instanceof Long) {
      return ((Number) v).longValue();
    }
    if (v instanceof Boolean) {
      return ((Boolean) v) ? 1L : 0L;
    }
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      return d == Math.rint(d) && Math.abs(d) < 9.0e15 ? (long) d : null;
    }
    if (v instanceof String) {
      java.util.regex.Matcher m = LAX_INTEGER.matcher(((String) v).strip());
      if (!m.matches()) {
        return null;
      }
      String digits = m.group(2).replace("_", "");
      if (digits.length() > 18) {
        return null;
      }
      long n = Long.parseLong(digits);
      return m.group(1).equals("-") ? -n : n;
    }
    return null;
  }
}
