package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.PlacementConfig;

/**
 * What keeps related requests on one producer under {@code placement.policy: cache_aware}
 * (docs/operations.md#placement): the client's session header when it sends one ({@code session:…}), else the leading
 * {@code prefix_blocks} full blocks of {@code prefix_block_chars} characters of the prompt as the client sent it
 * ({@code prefix:…}): a completion's prompt, a chat's messages in order (role and text of each). A prompt shorter
 * than one block has no affinity and is placed by load. The characters are hashed as they are read, only as many as
 * the blocks need, with no copy of the prompt.
 */
final class PromptAffinity {
  private PromptAffinity() {
  }

  static String of(JsonObject body, boolean chat, String session, PlacementConfig placement) {
    if (!PlacementConfig.CACHE_AWARE.equals(placement.policy())) return null;
    if (session != null && !session.isEmpty()) {
      BlockHash whole = new BlockHash(session.length(), session.length());
      whole.feed(session);
      return "session:" + Long.toHexString(whole.atBlock);
    }
    BlockHash prefix = new BlockHash(placement.prefixBlockChars(), placement.prefixBlockChars() * placement.prefixBlocks());
    if (chat) {
      messages(body.getValue("messages"), prefix);
    } else {
      prompt(body.getValue("prompt"), prefix);
    }
    return prefix.blocks == 0 ? null : "prefix:" + Long.toHexString(prefix.atBlock);
  }

  private static void prompt(Object prompt, BlockHash out) {
    if (prompt instanceof String s) {
      out.feed(s);
    } else if (prompt instanceof JsonArray list && !list.isEmpty()) {
      Object first = list.getValue(0);
      if (first instanceof Number) {
        for (int i = 0; i < list.size() && !out.full(); i++) {
          out.feed(String.valueOf(list.getValue(i)));
          out.feed(",");
        }
      } else {
        prompt(first, out);
      }
    }
  }

  private static void messages(Object messages, BlockHash out) {
    if (!(messages instanceof JsonArray list)) return;
    for (int i = 0; i < list.size() && !out.full(); i++) {
      if (!(list.getValue(i) instanceof JsonObject m)) continue;
      out.feed(m.getString("role", ""));
      out.feed("\u0000");
      Object content = m.getValue("content");
      if (content instanceof String s) {
        out.feed(s);
      } else if (content instanceof JsonArray parts) {
        for (Object part : parts) {
          if (part instanceof JsonObject p && p.getValue("text") instanceof String t) out.feed(t);
        }
      }
      out.feed("\u0001");
    }
  }

  /** FNV-1a, 64 bits, over at most {@code limit} characters; the hash as it stood at the last full block. */
  private static final class BlockHash {
    private final int blockChars;
    private final int limit;
    private long hash = 0xcbf29ce484222325L;
    private int count;
    long atBlock;
    int blocks;

    BlockHash(int blockChars, int limit) {
      this.blockChars = blockChars;
      this.limit = limit;
    }

    boolean full() {
      return count >= limit;
    }

    void feed(String s) {
      for (int i = 0; i < s.length() && count < limit; i++) {
        hash ^= s.charAt(i);
        hash *= 0x100000001b3L;
        if (++count % blockChars == 0) {
          atBlock = hash;
          blocks++;
        }
      }
    }
  }
}
