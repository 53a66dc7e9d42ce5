package narwhal.sim;

import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * vLLM's endpoints that run whole on one engine (docs/simulator.md): {@code POST /v1/embeddings}
 * (serving_embedding.py: a deterministic unit vector per input), {@code POST /detokenize} (the words of
 * {@link TokenizeRoute}'s ids seen so far) and {@code POST /v1/responses} (serving_responses.py, with its store on:
 * a response is kept so a later request can continue it by {@code previous_response_id}; an id this engine never
 * answered is vLLM's 404 {@code Response with id '…' not found.}), streaming ({@code event:} and {@code data:} lines,
 * no {@code [DONE]}) or not. Output is {@link Generator}'s, so the same conversation gives the same text anywhere.
 */
final class WholeRoutes {
  static final int EMBEDDING_DIMENSIONS = 8;
  private static final int STORED_RESPONSES = 10_000;
  private static final int DEFAULT_OUTPUT_TOKENS = 16;

  private final SimEngine engine;
  /** Each response's conversation text (its prompt and output), by id; the oldest dropped past the bound. */
  private final Map<String, String> conversations = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
      return size() > STORED_RESPONSES;
    }
  };
  /**
   * The words behind the token ids {@code /tokenize} gave, shared by every engine of the process as one tokenizer is
   * shared by the engines of a model (ids are a hash of the word; this is how they are read back), bounded.
   */
  private static final Map<Integer, String> VOCABULARY = new java.util.concurrent.ConcurrentHashMap<>();
  private static final int VOCABULARY_BOUND = 1_000_000;

  WholeRoutes(SimEngine engine) {
    this.engine = engine;
  }

  void embeddings(RoutingContext ctx) {
    JsonObject body = body(ctx, "/v1/embeddings");
    if (body == null) return;
    try {
      String model = model(body);
      Object input = body.getValue("input");
      JsonArray inputs = input instanceof String s ? new JsonArray().add(s) : input instanceof JsonArray a ? a : null;
      if (inputs == null || inputs.isEmpty() || inputs.stream().anyMatch(i -> !(i instanceof String))) {
        throw ApiError.badRequest("input: Input should be a valid string or a list of strings", "input");
      }
      Object format = body.getValue("encoding_format", "float");
      if (!"float".equals(format) && !"base64".equals(format)) {
        throw ApiError.badRequest("encoding_format: Input should be 'float' or 'base64'", "encoding_format");
      }
      JsonArray data = new JsonArray();
      int tokens = 0;
      for (int i = 0; i < inputs.size(); i++) {
        String text = inputs.getString(i);
        tokens += Generator.countTokens(text);
        JsonArray vector = vector(text);
        data.add(new JsonObject().put("index", i).put("object", "embedding")
            .put("embedding", "base64".equals(format) ? base64(vector) : vector));
      }
      reply(ctx, 200, new JsonObject().put("id", "embd-" + hex()).put("object", "list")
          .put("created", engine.clock().instant().getEpochSecond()).put("model", model).put("data", data)
          .put("usage", new JsonObject().put("prompt_tokens", tokens).put("total_tokens", tokens)
              .put("completion_tokens", 0).put("prompt_tokens_details", null)));
    } catch (ApiError e) {
      reply(ctx, e.status, e.toJson());
    }
  }

  /** Learns the words of a {@code /tokenize} body, so {@code /detokenize} can give them back. */
  void remember(RoutingContext ctx) {
    try {
      JsonObject body = ctx.body().asJsonObject();
      String text = body.getValue("prompt") instanceof String p ? p
          : body.containsKey("messages") ? CompletionRequest.renderMessages(body.getValue("messages")) : "";
      for (String word : text.strip().isEmpty() ? new String[0] : text.strip().split("\\s+")) {
        if (VOCABULARY.size() < VOCABULARY_BOUND) VOCABULARY.put(TokenizeRoute.tokenId(word), word);
      }
    } catch (RuntimeException e) {
      // TokenizeRoute answers what is wrong with the body
    }
  }

  void detokenize(RoutingContext ctx) {
    JsonObject body = body(ctx, "/detokenize");
    if (body == null) return;
    try {
      model(body);
      if (!(body.getValue("tokens") instanceof JsonArray ids) || ids.stream().anyMatch(t -> !(t instanceof Integer))) {
        throw ApiError.badRequest("tokens: Input should be a valid list of integers", "tokens");
      }
      StringBuilder text = new StringBuilder();
      for (Object id : ids) {
        if (text.length() > 0) text.append(' ');
        text.append(VOCABULARY.getOrDefault((Integer) id, "<" + id + ">"));
      }
      reply(ctx, 200, new JsonObject().put("prompt", text.toString()));
    } catch (ApiError e) {
      reply(ctx, e.status, e.toJson());
    }
  }

  /** Where {@link #body} leaves a fault rule it took for the route to apply. */
  private static final String FAULT = "narwhal.sim.fault";

  void responses(RoutingContext ctx) {
    JsonObject body = body(ctx, "/v1/responses");
    if (body == null) return;
    try {
      String model = model(body);
      String input = input(body.getValue("input"));
      String previous = body.getValue("previous_response_id") instanceof String p ? p : null;
      String history = "";
      if (previous != null) {
        synchronized (conversations) {
          history = conversations.get(previous);
        }
        if (history == null) {
          throw new ApiError(404, "Response with id '" + previous + "' not found.", "invalid_request_error", "response_id");
        }
      }
      String prompt = history + (history.isEmpty() ? "" : "\n") + input;
      int max = body.getValue("max_output_tokens") instanceof Integer m ? m : DEFAULT_OUTPUT_TOKENS;
      double temperature = body.getValue("temperature") instanceof Number t ? t.doubleValue() : 1.0;
      Generator.Output out = Generator.generate(prompt, 0, temperature, max, false);
      String text = String.join("", out.tokens());
      String id = "resp_" + hex();
      synchronized (conversations) {
        conversations.put(id, prompt + text);
      }
      JsonObject usage = new JsonObject().put("input_tokens", Generator.countTokens(prompt))
          .put("input_tokens_details", new JsonObject().put("cached_tokens", 0)).put("output_tokens", out.tokens().size())
          .put("output_tokens_details", new JsonObject().put("reasoning_tokens", 0))
          .put("total_tokens", Generator.countTokens(prompt) + out.tokens().size());
      String messageId = "msg_" + hex();
      JsonObject done = response(id, model, body, previous, "completed", new JsonArray().add(message(messageId, text, "completed")), usage);
      if (!Boolean.TRUE.equals(body.getValue("stream"))) {
        reply(ctx, 200, done);
        return;
      }
      FaultRule fault = ctx.get(FAULT);
      int silentAfter = fault != null && fault.type() == InjectedFault.SILENCE_AFTER ? fault.intParam("after", 0) : -1;
      stream(ctx.response(), done.copy().put("status", "in_progress").put("output", new JsonArray()).put("usage", null),
          messageId, out, text, done, silentAfter);
    } catch (ApiError e) {
      reply(ctx, e.status, e.toJson());
    }
  }

  /**
   * vLLM's stream of a text response: its event types in order, each with its {@code sequence_number}; with
   * {@code silentAfter} ≥ 0 (a {@code silence_after} fault) nothing more is written after that many deltas, and the
   * stream never ends.
   */
  private static void stream(HttpServerResponse response, JsonObject started, String messageId, Generator.Output out,
                             String text, JsonObject done, int silentAfter) {
    response.setChunked(true).putHeader("content-type", "text/event-stream; charset=utf-8");
    int[] seq = {0};
    java.util.function.BiConsumer<String, JsonObject> event = (type, data) -> response.write("event: " + type + "\ndata: "
        + new JsonObject().put("type", type).put("sequence_number", seq[0]++).mergeIn(data).encode() + "\n\n");
    JsonObject part = new JsonObject().put("type", "output_text").put("text", "").put("annotations", new JsonArray()).put("logprobs", null);
    JsonObject at = new JsonObject().put("item_id", messageId).put("output_index", 0).put("content_index", 0);
    event.accept("response.created", new JsonObject().put("response", started));
    event.accept("response.in_progress", new JsonObject().put("response", started));
    event.accept("response.output_item.added", new JsonObject().put("output_index", 0)
        .put("item", message(messageId, null, "in_progress")));
    event.accept("response.content_part.added", at.copy().put("part", part));
    int deltas = 0;
    for (String token : out.tokens()) {
      if (deltas++ == silentAfter) return;
      event.accept("response.output_text.delta", at.copy().put("delta", token).put("logprobs", new JsonArray()));
    }
    if (silentAfter >= 0) return;
    event.accept("response.output_text.done", at.copy().put("text", text).put("logprobs", new JsonArray()));
    event.accept("response.content_part.done", at.copy().put("part", part.copy().put("text", text)));
    event.accept("response.output_item.done", new JsonObject().put("output_index", 0).put("item", message(messageId, text, "completed")));
    event.accept("response.completed", new JsonObject().put("response", done));
    response.end();
  }

  private JsonObject response(String id, String model, JsonObject body, String previous, String status, JsonArray output,
                              JsonObject usage) {
    return new JsonObject().put("id", id).put("created_at", engine.clock().instant().getEpochSecond())
        .put("incomplete_details", null).put("instructions", body.getValue("instructions")).put("metadata", null)
        .put("model", model).put("object", "response").put("output", output).put("parallel_tool_calls", true)
        .put("temperature", body.getValue("temperature", 1.0)).put("tool_choice", "auto").put("tools", new JsonArray())
        .put("top_p", body.getValue("top_p", 1.0)).put("background", false)
        .put("max_output_tokens", body.getValue("max_output_tokens")).put("max_tool_calls", null)
        .put("previous_response_id", previous).put("prompt", null).put("reasoning", null).put("service_tier", "auto")
        .put("status", status).put("text", null).put("top_logprobs", null).put("truncation", "disabled").put("usage", usage)
        .put("user", null);
  }

  private static JsonObject message(String id, String text, String status) {
    JsonArray content = new JsonArray();
    if (text != null) {
      content.add(new JsonObject().put("annotations", new JsonArray()).put("text", text).put("type", "output_text")
          .put("logprobs", null));
    }
    return new JsonObject().put("id", id).put("content", content).put("role", "assistant").put("status", status)
        .put("type", "message");
  }

  /** The text of {@code input}: a string, or the contents of its messages one a line. */
  private static String input(Object input) {
    if (input instanceof String s) return s;
    if (input instanceof JsonArray items && !items.isEmpty()) return CompletionRequest.renderMessages(items);
    throw ApiError.badRequest("input: Input should be a valid string or a list of input items", "input");
  }

  private String model(JsonObject body) {
    Object model = body.getValue("model");
    if (model == null) return engine.config().servedNames().get(0);
    if (!(model instanceof String name)) throw ApiError.badRequest("model must be a string", "model");
    if (!engine.config().serves(name)) throw ApiError.modelNotFound(name);
    return name;
  }

  /** A unit vector of {@link #EMBEDDING_DIMENSIONS} floats derived from the text alone. */
  private static JsonArray vector(String text) {
    long h = Generator.hash(text, 0, 0);
    double[] v = new double[EMBEDDING_DIMENSIONS];
    double norm = 0;
    for (int i = 0; i < v.length; i++) {
      h = h * 6364136223846793005L + 1442695040888963407L;
      v[i] = ((h >>> 11) / (double) (1L << 53)) * 2 - 1;
      norm += v[i] * v[i];
    }
    JsonArray out = new JsonArray();
    for (double x : v) out.add(x / Math.sqrt(norm));
    return out;
  }

  /** vLLM's {@code encoding_format: "base64"}: the floats as little-endian float32, base64-encoded. */
  private static String base64(JsonArray vector) {
    java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(vector.size() * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    vector.forEach(x -> bytes.putFloat(((Number) x).floatValue()));
    return java.util.Base64.getEncoder().encodeToString(bytes.array());
  }

  private JsonObject body(RoutingContext ctx, String path) {
    JsonObject body;
    try {
      body = ctx.body().asJsonObject();
    } catch (RuntimeException e) {
      body = null;
    }
    engine.log().record(path, ctx.request().getHeader("x-request-id"), "whole", body);
    if (body == null) {
      reply(ctx, 400, ApiError.badRequest("The request body must be a JSON object.", null).toJson());
      return null;
    }
    // of the injected faults, these endpoints answer a status one (a decode-phase rule: they run whole, no handoff);
    // a streamed response also goes silent on a silence_after one
    FaultRule fault = engine.faults().take("decode", false, body.getValue("model") instanceof String m ? m : null);
    if (fault != null && fault.type() == InjectedFault.STATUS) {
      int status = fault.intParam("status", 500);
      reply(ctx, status, new ApiError(status, "injected fault: HTTP " + status, null, null).toJson());
      return null;
    }
    if (fault != null) ctx.put(FAULT, fault);
    return body;
  }

  private static String hex() {
    return UUID.randomUUID().toString().replace("-", "");
  }

  private static void reply(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
  }
}
