package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Folds the chunks of an OpenAI-style stream into the body the engine returns for {@code stream: false}, field for
 * field: text and content joined; every other string delta field (the engine's own reasoning field, {@code refusal},
 * a field not invented yet) joined under its own name; tool calls per {@code index} with their argument fragments
 * joined; logprob arrays ({@code content}, {@code tokens}, {@code token_logprobs}, {@code top_logprobs},
 * {@code text_offset}) and {@code token_ids} concatenated; the last {@code finish_reason}, {@code stop_reason} and
 * {@code usage}; any other field kept with its last value. The router's own fields (id, object, created, model,
 * {@code kv_transfer_params}) are set by the caller. The fields vLLM's full body spells out as null and its chunks omit
 * ({@code service_tier}, {@code system_fingerprint}, {@code message.refusal}, {@code prompt_logprobs}, ...) are written
 * as null when the stream did not fill them.
 */
final class AnswerAssembly {
  private static final Set<String> OWN = Set.of("id", "object", "created", "model", "choices", "usage", "kv_transfer_params");

  private final boolean chat;
  private final String toolCallContent;
  private final Map<String, Object> top = new LinkedHashMap<>();
  private final TreeMap<Integer, Choice> choices = new TreeMap<>();
  private JsonObject usage;
  /** The field a message without reasoning spells out as null: the engine's ({@link #reasoningField}), else vLLM's current one. */
  private String reasoningField = "reasoning";

  AnswerAssembly(boolean chat) {
    this(chat, null);
  }

  /**
   * @param toolCallContent the {@code content} of a message that streamed tool calls or reasoning but no content: null
   *     (vLLM, tool choice auto), or {@code ""} (vLLM, tool choice {@code required} or named)
   */
  AnswerAssembly(boolean chat, String toolCallContent) {
    this.chat = chat;
    this.toolCallContent = toolCallContent;
  }

  /** The content vLLM gives a tool-calling message without text, by the request's {@code tool_choice}. */
  static String toolCallContent(Object toolChoice) {
    return toolChoice instanceof JsonObject || "required".equals(toolChoice) ? "" : null;
  }

  /** The field the decode engine names reasoning with ({@code reasoning_content} on older vLLM); null: unknown. */
  void reasoningField(String field) {
    if (field != null) reasoningField = field;
  }

  void accept(JsonObject chunk) {
    chunk.forEach(e -> {
      if (!OWN.contains(e.getKey()) && e.getValue() != null) top.put(e.getKey(), e.getValue());
    });
    if (chunk.getValue("usage") instanceof JsonObject u) usage = u;
    if (!(chunk.getValue("choices") instanceof JsonArray list)) return;
    for (int i = 0; i < list.size(); i++) {
      if (list.getValue(i) instanceof JsonObject c) {
        int index = c.getValue("index") instanceof Number n ? n.intValue() : i;
        choices.computeIfAbsent(index, k -> new Choice()).accept(c);
      }
    }
  }

  /** The assembled body; {@code finishReason} and {@code fallbackUsage} stand in when the stream carried none. */
  JsonObject body(String id, long created, String model, String finishReason, JsonObject fallbackUsage) {
    return body(id, created, model, finishReason, fallbackUsage, null);
  }

  /**
   * As {@link #body(String, long, String, String, JsonObject)}, with the prompt's logprobs the prefill computed
   * (null: not asked) where vLLM puts them: in the completion's choice, at the top of a chat answer.
   */
  JsonObject body(String id, long created, String model, String finishReason, JsonObject fallbackUsage, JsonArray promptLogprobs) {
    JsonArray out = new JsonArray();
    if (choices.isEmpty()) choices.put(0, new Choice());
    choices.forEach((index, c) -> out.add(c.toJson(index, finishReason)));
    if (!chat && promptLogprobs != null) out.getJsonObject(0).put("prompt_logprobs", promptLogprobs);
    JsonObject body = new JsonObject().put("id", id).put("object", chat ? "chat.completion" : "text_completion")
        .put("created", created).put("model", model).put("choices", out).put("service_tier", null)
        .put("system_fingerprint", null);
    top.forEach(body::put);
    JsonObject finalUsage = usage != null ? usage : fallbackUsage;
    if (finalUsage != null && !finalUsage.containsKey("prompt_tokens_details")) {
      finalUsage = finalUsage.copy().put("prompt_tokens_details", null);
    }
    body.put("usage", finalUsage);
    if (chat) {
      if (promptLogprobs != null) body.put("prompt_logprobs", promptLogprobs);
      if (!body.containsKey("prompt_logprobs")) body.put("prompt_logprobs", null);
      if (!body.containsKey("prompt_token_ids")) body.put("prompt_token_ids", null);
    }
    return body.put("kv_transfer_params", null);
  }

  /** One choice being assembled. */
  private final class Choice {
    private final StringBuilder text = new StringBuilder();
    private boolean contentSeen;
    private String role;
    private final Map<String, StringBuilder> deltaTexts = new LinkedHashMap<>();
    private final Map<String, Object> deltaOther = new LinkedHashMap<>();
    private final TreeMap<Integer, ToolCall> toolCalls = new TreeMap<>();
    private final Map<String, Object> other = new LinkedHashMap<>();
    private JsonObject logprobs;
    private JsonArray tokenIds;
    private String finishReason;
    private Object stopReason;

    void accept(JsonObject c) {
      c.forEach(e -> {
        Object v = e.getValue();
        switch (e.getKey()) {
          case "index" -> { }
          case "text" -> {
            if (v instanceof String s) text.append(s);
          }
          case "delta", "message" -> {
            if (v instanceof JsonObject d) delta(d);
          }
          case "logprobs" -> {
            if (v instanceof JsonObject lp) logprobs(lp);
          }
          case "token_ids" -> {
            if (v instanceof JsonArray ids) tokenIds = tokenIds == null ? ids.copy() : tokenIds.addAll(ids);
          }
          case "finish_reason" -> {
            if (v instanceof String s) finishReason = s;
          }
          case "stop_reason" -> {
            if (v != null) stopReason = v;
          }
          default -> {
            if (v != null) other.put(e.getKey(), v);
          }
        }
      });
    }

    private void delta(JsonObject d) {
      boolean roleChunk = d.getValue("role") != null;
      d.forEach(e -> {
        Object v = e.getValue();
        switch (e.getKey()) {
          case "role" -> {
            if (v instanceof String s) role = s;
          }
          case "content" -> {
            if (v instanceof String s) {
              text.append(s);
              contentSeen |= !roleChunk;
            }
          }
          case "tool_calls" -> {
            if (v instanceof JsonArray calls) {
              for (int i = 0; i < calls.size(); i++) {
                if (calls.getValue(i) instanceof JsonObject call) {
                  int index = call.getValue("index") instanceof Number n ? n.intValue() : i;
                  toolCalls.computeIfAbsent(index, k -> new ToolCall()).accept(call);
                }
              }
            }
          }
          default -> {
            if (v instanceof String s) deltaTexts.computeIfAbsent(e.getKey(), k -> new StringBuilder()).append(s);
            else if (v != null) deltaOther.put(e.getKey(), v);
          }
        }
      });
    }

    private void logprobs(JsonObject lp) {
      if (logprobs == null) logprobs = new JsonObject();
      lp.forEach(e -> {
        if (e.getValue() instanceof JsonArray part && logprobs.getValue(e.getKey()) instanceof JsonArray acc) {
          acc.addAll(part);
        } else if (e.getValue() instanceof JsonArray part) {
          logprobs.put(e.getKey(), part.copy());
        } else if (e.getValue() != null) {
          logprobs.put(e.getKey(), e.getValue());
        }
      });
    }

    JsonObject toJson(int index, String fallbackFinish) {
      JsonObject choice = new JsonObject().put("index", index);
      if (chat) {
        JsonArray calls = new JsonArray();
        toolCalls.values().forEach(t -> calls.add(t.toJson()));
        boolean contentless = !contentSeen && (!calls.isEmpty() || !deltaTexts.isEmpty());
        JsonObject message = new JsonObject().put("role", role != null ? role : "assistant")
            .put("content", contentless ? toolCallContent : text.toString()).put("refusal", null).put("annotations", null)
            .put("audio", null).put("function_call", null).put("tool_calls", calls);
        deltaTexts.forEach((k, v) -> message.put(k, v.toString()));
        deltaOther.forEach(message::put);
        if (!message.containsKey("reasoning") && !message.containsKey("reasoning_content")) message.put(reasoningField, null);
        choice.put("message", message);
      } else {
        choice.put("text", text.toString());
      }
      choice.put("logprobs", logprobs).put("finish_reason", finishReason != null ? finishReason : fallbackFinish)
          .put("stop_reason", stopReason).put("token_ids", tokenIds);
      if (!chat) choice.put("prompt_logprobs", null).put("prompt_token_ids", null);
      other.forEach(choice::put);
      return choice;
    }
  }

  /** One tool call: the first id, type and name seen, the argument fragments joined. */
  private static final class ToolCall {
    private final Map<String, Object> fields = new LinkedHashMap<>();
    private final Map<String, Object> function = new LinkedHashMap<>();
    private final StringBuilder arguments = new StringBuilder();

    void accept(JsonObject call) {
      call.forEach(e -> {
        if (e.getKey().equals("index") || e.getValue() == null) return;
        if (e.getKey().equals("function") && e.getValue() instanceof JsonObject fn) {
          fn.forEach(f -> {
            if (f.getKey().equals("arguments") && f.getValue() instanceof String s) arguments.append(s);
            else if (f.getValue() != null) function.putIfAbsent(f.getKey(), f.getValue());
          });
        } else {
          fields.putIfAbsent(e.getKey(), e.getValue());
        }
      });
    }

    JsonObject toJson() {
      JsonObject fn = new JsonObject();
      function.forEach(fn::put);
      fn.put("arguments", arguments.toString());
      JsonObject out = new JsonObject();
      fields.forEach(out::put);
      if (!out.containsKey("type")) out.put("type", "function");
      return out.put("function", fn);
    }
  }
}
