package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.process.SimBench;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * The request bodies of one placement-benchmark run, and the workload's ideal prefix-cache hit rate: the share of
 * prompt tokens that repeat a block-aligned prefix sent before (16-token blocks of the simulator's whitespace
 * tokens, at most all but the last token, as vLLM caches), i.e. what one engine with an unbounded cache would hit.
 * Shapes: {@code shared-prefix} (inference-perf's {@code shared_prefix}: {@code groups} system prompts of
 * {@code systemTokens}, each request one of them plus one of {@code promptsPerGroup} questions of
 * {@code questionTokens}), {@code multi-turn} (chat: {@code groups} conversations, each request the next turn of
 * one, its history plus a new user message; a conversation restarts after {@code turns}) and {@code no-sharing}
 * (prompts of {@code systemTokens + questionTokens} random words). Words come from {@code seed}, and every run's
 * seed differs, so no run hits what another left in the caches. Not thread-safe: used on one event loop.
 */
public final class PlacementWorkload {
  static final int BLOCK = 16;
  static final String SHARED = "shared-prefix";
  static final String MULTI_TURN = "multi-turn";
  static final String UNIQUE = "no-sharing";

  record Shape(int groups, int promptsPerGroup, int systemTokens, int questionTokens, int outputTokens, int turns) {
  }

  private final String kind;
  private final Shape shape;
  private final Random random;
  private final String salt;
  private final List<String> systems = new ArrayList<>();
  private final List<List<JsonObject>> conversations = new ArrayList<>();
  private final Set<Long> seenBlocks = new HashSet<>();
  private long promptTokens;
  private long repeatable;

  PlacementWorkload(String kind, Shape shape, long seed) {
    this.kind = kind;
    this.shape = shape;
    this.random = new Random(seed);
    this.salt = "s" + Long.toHexString(seed);
    for (int g = 0; g < shape.groups(); g++) systems.add(salt + " " + words(shape.systemTokens() - 1));
    for (int g = 0; g < shape.groups(); g++) conversations.add(new ArrayList<>());
  }

  String path() {
    return kind.equals(MULTI_TURN) ? "/v1/chat/completions" : "/v1/completions";
  }

  /** The next request's body. */
  Buffer next() {
    JsonObject body = new JsonObject().put("model", SimBench.MODEL).put("max_tokens", shape.outputTokens()).put("stream", true)
        .put("ignore_eos", true);
    switch (kind) {
      case SHARED -> {
        int g = random.nextInt(shape.groups());
        int q = random.nextInt(shape.promptsPerGroup());
        String prompt = systems.get(g) + " " + new Random(g * 1_000_003L + q).ints(shape.questionTokens(), 0, 50_000)
            .mapToObj(i -> "q" + i).reduce((a, b) -> a + " " + b).orElse("");
        account(prompt);
        body.put("prompt", prompt);
      }
      case MULTI_TURN -> {
        int c = random.nextInt(shape.groups());
        List<JsonObject> history = conversations.get(c);
        if (history.size() >= 1 + 2 * shape.turns()) history.clear();
        if (history.isEmpty()) history.add(new JsonObject().put("role", "system").put("content", salt + " " + c + " " + words(shape.systemTokens() - 3)));
        history.add(new JsonObject().put("role", "user").put("content", words(shape.questionTokens() - 1)));
        JsonArray messages = new JsonArray();
        StringBuilder rendered = new StringBuilder();
        for (JsonObject m : history) {
          messages.add(m.copy());
          rendered.append(m.getString("role")).append(": ").append(m.getString("content")).append('\n');
        }
        account(rendered.toString());
        history.add(new JsonObject().put("role", "assistant").put("content", words(shape.outputTokens() - 1)));
        body.put("messages", messages);
      }
      default -> {
        String prompt = salt + " " + words(shape.systemTokens() + shape.questionTokens() - 1);
        account(prompt);
        body.put("prompt", prompt);
      }
    }
    return body.toBuffer();
  }

  /** Repeated prompt tokens over all prompt tokens sent so far. */
  double idealHitRate() {
    return promptTokens == 0 ? 0 : (double) repeatable / promptTokens;
  }

  private void account(String prompt) {
    String[] tokens = prompt.strip().split("\\s+");
    promptTokens += tokens.length;
    int hittable = Math.max(0, (tokens.length - 1) / BLOCK);
    long h = 0x9e3779b97f4a7c15L;
    boolean prefix = true;
    for (int b = 0; b < tokens.length / BLOCK; b++) {
      for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) h = h * 0x100000001b3L ^ tokens[i].hashCode();
      boolean seen = !seenBlocks.add(h);
      if (prefix && seen && b < hittable) repeatable += BLOCK;
      else prefix = false;
    }
  }

  private String words(int n) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < n; i++) {
      if (i > 0) s.append(' ');
      s.append('w').append(random.nextInt(100_000));
    }
    return s.toString();
  }
}
