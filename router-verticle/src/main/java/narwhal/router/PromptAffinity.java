package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.PlacementConfig;

/**
 * What keeps related requests on one producer under {@code placement.policy: cache_aware}
 * (docs/operations.md#placement): the client's session header when it sends one ({@code session:…}), else the leading
 * {@code prefix_blocks} full blocks of {@code prefix_block_chars} characters of the prompt as the client sent it
 * ({@code prefix:…}): a completion's prompt, a chat's messages in order (role and text of each). A prompt shorter
 * than one block has no affinity and is placed by load. Only the characters needed are read.
 */
final class PromptAffinity {
  private PromptAffinity() {
  }

  static String of(JsonObject body, boolean chat, String session, PlacementConfig placement) {
    if (!PlacementConfig.CACHE_AWARE.equals(placement.policy())) return null;
    if (session != null && !session.isEmpty()) return "session:" + Long.toHexString(hash(session, session.length()));
    int wanted = placement.prefixBlockChars() * placement.prefixBlocks();
    StringBuilder text = new StringBuilder(Math.min(wanted, 4096));
    if (chat) {
      messages(body.getValue("messages"), text, wanted);
    } else {
      prompt(body.getValue("prompt"), text, wanted);
    }
    int blocks = Math.min(placement.prefixBlocks(), text.length() / placement.prefixBlockChars());
    if (blocks == 0) return null;
    return "prefix:" + Long.toHexString(hash(text, blocks * placement.prefixBlockChars()));
  }

  private static void prompt(Object prompt, StringBuilder out, int wanted) {
    if (prompt instanceof String s) {
      append(out, s, wanted);
    } else if (prompt instanceof JsonArray list && !list.isEmpty()) {
      Object first = list.getValue(0);
      if (first instanceof Number) {
        for (int i = 0; i < list.size() && out.length() < wanted; i++) append(out, list.getValue(i) + ",", wanted);
      } else {
        prompt(first, out, wanted);
      }
    }
  }

  private static void messages(Object messages, StringBuilder out, int wanted) {
    if (!(messages instanceof JsonArray list)) return;
    for (int i = 0; i < list.size() && out.length() < wanted; i++) {
      if (!(list.getValue(i) instanceof JsonObject m)) continue;
      append(out, m.getString("role", "") + '\u0000', wanted);
      Object content = m.getValue("content");
      if (content instanceof String s) {
        append(out, s, wanted);
      } else if (content instanceof JsonArray parts) {
        for (Object part : parts) {
          if (part instanceof JsonObject p && p.getValue("text") instanceof String t) append(out, t, wanted);
        }
      }
      append(out, "\u0001", wanted);
    }
  }

  private static void append(StringBuilder out, String s, int wanted) {
    out.append(s, 0, Math.min(s.length(), Math.max(0, wanted - out.length())));
  }

  /** FNV-1a, 64 bits, over the first {@code n} characters. */
  private static long hash(CharSequence s, int n) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < n; i++) {
      h ^= s.charAt(i);
      h *= 0x100000001b3L;
    }
    return h;
  }
}
