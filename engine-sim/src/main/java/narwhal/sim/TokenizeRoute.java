package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.nio.charset.StandardCharsets;

/**
 * vLLM's {@code POST /tokenize}: a completions form ({@code prompt}, a string) or a chat form ({@code messages},
 * rendered with the same simulated chat template as {@code /v1/chat/completions}), answered with
 * {@code {count, max_model_len, tokens, token_strs}} ({@code token_strs} null unless {@code return_token_strs}).
 * The count is the one a completion of the same prompt is checked and billed with, so a router may ask here
 * whether a request fits the context before it sends any leg. A {@code tokenize}-phase fault rule
 * ({@link FaultRule#phase}) meets it before its answer: {@code status}, {@code queue_full}, {@code reset} or
 * {@code hang_before_headers} (never answered).
 */
final class TokenizeRoute {
  /** Token ids the simulated vocabulary spans; a word's id is a hash of it. */
  static final int VOCAB_SIZE = 151_936;

  private TokenizeRoute() {
  }

  static void handle(RoutingContext ctx, SimEngine engine) {
    engine.counters().tokenizeRequests.incrementAndGet();
    JsonObject body;
    try {
      Object value = ctx.body().asJsonObject();
      body = value instanceof JsonObject ? (JsonObject) value : null;
    } catch (RuntimeException e) {
      body = null;
    }
    if (body == null) {
      reply(ctx, 400, ApiError.badRequest("The request body must be a JSON object.", null).toJson());
      return;
    }
    if (engine.config().isLogTokenize()) engine.log().record("/tokenize", ctx.request().getHeader("x-request-id"), "tokenize", body.copy());
    FaultRule fault = engine.faults().take("tokenize", false, body.getValue("model") instanceof String m ? m : null);
    if (fault != null) {
      switch (fault.type()) {
        case STATUS -> {
          int status = fault.intParam("status", 500);
          reply(ctx, status, new ApiError(status, fault.stringParam("message", "injected fault: HTTP " + status),
              fault.stringParam("type", null), null).toJson());
        }
        case QUEUE_FULL -> reply(ctx, 503, ApiError.queueFull().toJson());
        case RESET -> ctx.request().connection().close();
        default -> {
          // hang_before_headers: nothing is answered
        }
      }
      return;
    }
    try {
      reply(ctx, 200, tokenize(body, engine.config()));
    } catch (ApiError e) {
      reply(ctx, e.status, e.toJson());
    }
  }

  static JsonObject tokenize(JsonObject body, SimEngineOptions options) {
    Object model = body.getValue("model");
    if (model != null && !(model instanceof String name && options.serves(name))) {
      throw model instanceof String ? ApiError.modelNotFound((String) model) : ApiError.badRequest("model must be a string", "model");
    }
    String text;
    if (body.containsKey("messages")) {
      text = CompletionRequest.renderMessages(body.getValue("messages"));
    } else if (body.getValue("prompt") instanceof String) {
      text = body.getString("prompt");
    } else {
      throw ApiError.badRequest("prompt: Input should be a valid string", "prompt");
    }
    String[] words = text.strip().isEmpty() ? new String[0] : text.strip().split("\\s+");
    JsonArray tokens = new JsonArray();
    for (String word : words) {
      tokens.add(tokenId(word));
    }
    JsonArray strs = null;
    if (Boolean.TRUE.equals(body.getValue("return_token_strs"))) {
      strs = new JsonArray();
      for (String word : words) {
        strs.add(word);
      }
    }
    return new JsonObject().put("count", words.length).put("max_model_len", options.getMaxModelLen())
      .put("tokens", tokens).put("token_strs", strs);
  }

  /** A word's token id: FNV-1a over its UTF-8 bytes, within the vocabulary. */
  static int tokenId(String word) {
    int h = 0x811c9dc5;
    for (byte b : word.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x01000193;
    }
    return Math.floorMod(h, VOCAB_SIZE);
  }

  private static void reply(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
  }
}
