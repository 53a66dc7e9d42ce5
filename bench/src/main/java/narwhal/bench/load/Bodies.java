package narwhal.bench.load;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.process.SimBench;

/**
 * Request bodies the scenarios send: completions and chat with a fixed 16-word prompt and {@code ignore_eos},
 * so every request produces exactly {@code maxTokens} tokens.
 */
public final class Bodies {
  public static final String PROMPT = "the narwhal is a medium sized toothed whale that lives year round in the arctic";

  private Bodies() {
  }

  public static JsonObject completion(int maxTokens, boolean stream) {
    return new JsonObject().put("model", SimBench.MODEL).put("prompt", PROMPT).put("max_tokens", maxTokens).put("stream", stream)
        .put("ignore_eos", true);
  }

  public static JsonObject chat(int maxTokens, boolean stream) {
    return new JsonObject().put("model", SimBench.MODEL)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", PROMPT)))
        .put("max_tokens", maxTokens).put("stream", stream).put("ignore_eos", true);
  }

  public static Buffer buffer(JsonObject body) {
    return body.toBuffer();
  }
}
