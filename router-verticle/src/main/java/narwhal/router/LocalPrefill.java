package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * Whether a request is short enough to run whole on one {@code both} engine, with no remote prefill
 * ({@code placement.local_prefill_max_tokens}, docs/operations.md#local-prefill). Its prompt's tokens are known without
 * tokenizing: a prompt of token ids is counted exactly; text by its UTF-8 bytes, which bound its tokens (a token of a
 * byte-level vocabulary covers at least one byte); a chat by the UTF-8 bytes of each message's role and text, plus
 * {@link #CHAT_MESSAGE_TOKENS} per message for the chat template's markers, plus the JSON size of any other message
 * field and of {@code tools}. A message with a part that is not text (an image, audio, a file), a prompt that is
 * not text or token ids, and a request asking for {@code prompt_logprobs} (a prefill leg computes them) never run
 * local. The count stops as soon as it passes the limit: a long prompt costs no more than the limit to tell.
 */
final class LocalPrefill {
  /** The chat template's tokens around one message (role markers, separators), as counted for the limit. */
  static final int CHAT_MESSAGE_TOKENS = 8;

  private LocalPrefill() {
  }

  /** Whether {@code body}'s prompt is at most {@code maxTokens} tokens as counted above; false when {@code maxTokens} is 0. */
  static boolean eligible(JsonObject body, boolean chat, int maxTokens) {
    if (maxTokens <= 0) return false;
    if (body.getValue("prompt_logprobs") != null) return false;
    long count = chat ? chat(body, maxTokens) : completion(body.getValue("prompt"), maxTokens);
    return count >= 0 && count <= maxTokens;
  }

  /** The prompt's tokens as counted, or -1 when they cannot be told without tokenizing. */
  private static long completion(Object prompt, int limit) {
    if (prompt instanceof JsonArray one && one.size() == 1 && !(one.getValue(0) instanceof Number)) prompt = one.getValue(0);
    if (prompt instanceof String text) return utf8Bytes(text, 0, limit);
    if (prompt instanceof JsonArray ids && !ids.isEmpty()) {
      for (Object id : ids) if (!(id instanceof Number)) return -1;
      return ids.size();
    }
    return -1;
  }

  private static long chat(JsonObject body, int limit) {
    if (!(body.getValue("messages") instanceof JsonArray messages) || messages.isEmpty()) return -1;
    long count = body.getValue("tools") == null ? 0 : jsonSize(body.getValue("tools"));
    for (Object item : messages) {
      if (count > limit) return count;
      if (!(item instanceof JsonObject m)) return -1;
      count += CHAT_MESSAGE_TOKENS;
      for (String field : m.fieldNames()) {
        Object value = m.getValue(field);
        if ("content".equals(field)) {
          long content = content(value, count, limit);
          if (content < 0) return -1;
          count = content;
        } else if (value instanceof String text) {
          count = utf8Bytes(text, count, limit);
        } else if (value != null) {
          count += jsonSize(value);
        }
      }
    }
    return count;
  }

  /** {@code count} plus a message content's text; -1 for a part that is not text. */
  private static long content(Object content, long count, int limit) {
    if (content == null) return count;
    if (content instanceof String text) return utf8Bytes(text, count, limit);
    if (!(content instanceof JsonArray parts)) return -1;
    for (Object part : parts) {
      if (!(part instanceof JsonObject p) || !(p.getValue("text") instanceof String text)) return -1;
      Object type = p.getValue("type");
      if (type != null && !"text".equals(type)) return -1;
      count = utf8Bytes(text, count, limit);
    }
    return count;
  }

  private static long jsonSize(Object value) {
    return value instanceof JsonObject o ? o.encode().length() : value instanceof JsonArray a ? a.encode().length()
        : String.valueOf(value).length();
  }

  /** {@code count} plus the UTF-8 size of {@code text}, read only until the sum passes {@code limit}. */
  static long utf8Bytes(String text, long count, int limit) {
    for (int i = 0; i < text.length() && count <= limit; i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        count += 1;
      } else if (c < 0x800) {
        count += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
        count += 4;
        i++;
      } else {
        count += 3;
      }
    }
    return count;
  }
}
