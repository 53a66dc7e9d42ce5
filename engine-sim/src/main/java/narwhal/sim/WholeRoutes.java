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
 * no {@code [DONE]}, one delta per step of the latency model) or not; {@code GET /v1/responses/{id}} and
 * {@code POST /v1/responses/{id}/cancel} (api_router.py) answer from that store. Output is {@link Generator}'s, so
 * the same conversation gives the same text anywhere. The engine's fault plan applies as to a decode leg
 * (docs/simulator.md#endpoints-that-run-whole).
 */
final class WholeRoutes {
  static final int EMBEDDING_DIMENSIONS = 8;
  private static final int STORED_RESPONSES = 10_000;
  private static final int DEFAULT_OUTPUT_TOKENS = 16;

  private final SimEngine engine;
  /** A stored response: its conversation text (prompt and output) and the response object as answered. */
  private record Stored(String conversation, JsonObject response) {
  }

  /** Each response, by id; the oldest dropped past the bound. */
  private final Map<String, Stored> conversations = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Stored> eldest) {
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
        Stored stored;
        synchronized (conversations) {
          stored = conversations.get(previous);
        }
        if (stored == null) throw notFound(previous);
        history = stored.conversation();
      }
      String prompt = history + (history.isEmpty() ? "" : "\n") + input;
      int max = body.getValue("max_output_tokens") instanceof Integer m ? m : DEFAULT_OUTPUT_TOKENS;
      double temperature = body.getValue("temperature") instanceof Number t ? t.doubleValue() : 1.0;
      Generator.Output out = Generator.generate(prompt, 0, temperature, max, false);
      String text = String.join("", out.tokens());
      String id = "resp_" + hex();
      JsonObject usage = new JsonObject().put("input_tokens", Generator.countTokens(prompt))
          .put("input_tokens_details", new JsonObject().put("cached_tokens", 0)).put("output_tokens", out.tokens().size())
          .put("output_tokens_details", new JsonObject().put("reasoning_tokens", 0))
          .put("total_tokens", Generator.countTokens(prompt) + out.tokens().size());
      String messageId = "msg_" + hex();
      JsonObject done = response(id, model, body, previous, "completed", new JsonArray().add(message(messageId, text, "completed")), usage);
      synchronized (conversations) {
        conversations.put(id, new Stored(prompt + text, done));
      }
      long[] steps = steps(ctx, Generator.countTokens(prompt), out.tokens().size());
      if (!Boolean.TRUE.equals(body.getValue("stream"))) {
        long total = 0;
        for (long step : steps) total += step;
        later(ctx, total, () -> reply(ctx, 200, done));
        return;
      }
      stream(ctx, done.copy().put("status", "in_progress").put("output", new JsonArray()).put("usage", null),
          messageId, out, text, done, steps);
    } catch (ApiError e) {
      reply(ctx, e.status, e.toJson());
    }
  }

  /**
   * vLLM's stream of a text response: its event types in order, each with its {@code sequence_number}, delta {@code i}
   * written {@code steps[i]} ms after the one before (the latency model's steps). Under a fault that cuts the output
   * after {@code after} deltas: {@code silence_after} writes nothing more and leaves the stream open,
   * {@code close_before_done} ends it without its closing events, {@code reset} closes the connection.
   */
  private static void stream(RoutingContext ctx, JsonObject started, String messageId, Generator.Output out, String text,
                             JsonObject done, long[] steps) {
    HttpServerResponse response = ctx.response();
    FaultRule fault = ctx.get(FAULT);
    InjectedFault kind = fault == null ? null : fault.type();
    boolean cuts = kind == InjectedFault.SILENCE_AFTER || kind == InjectedFault.CLOSE_BEFORE_DONE || kind == InjectedFault.RESET;
    int cutAfter = cuts ? Math.min(out.tokens().size(), fault.intParam("after", 0)) : -1;
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
    Runnable finish = () -> {
      if (kind == InjectedFault.SILENCE_AFTER) return;
      if (kind == InjectedFault.CLOSE_BEFORE_DONE) {
        response.end();
        return;
      }
      if (kind == InjectedFault.RESET) {
        ctx.request().connection().close();
        return;
      }
      event.accept("response.output_text.done", at.copy().put("text", text).put("logprobs", new JsonArray()));
      event.accept("response.content_part.done", at.copy().put("part", part.copy().put("text", text)));
      event.accept("response.output_item.done", new JsonObject().put("output_index", 0).put("item", message(messageId, text, "completed")));
      event.accept("response.completed", new JsonObject().put("response", done));
      response.end();
    };
    int deltas = cuts ? cutAfter : out.tokens().size();
    delta(ctx, 0, deltas, steps, i -> event.accept("response.output_text.delta",
        at.copy().put("delta", out.tokens().get(i)).put("logprobs", new JsonArray())), finish);
  }

  /** Writes deltas {@code i} to {@code count - 1}, each after its step, then runs {@code then}; stops if the client left. */
  private static void delta(RoutingContext ctx, int i, int count, long[] steps, java.util.function.IntConsumer write, Runnable then) {
    if (ctx.response().closed()) return;
    if (i >= count) {
      then.run();
      return;
    }
    later(ctx, steps[i], () -> {
      if (ctx.response().closed()) return;
      write.accept(i);
      delta(ctx, i + 1, count, steps, write, then);
    });
  }

  /**
   * The wait before each of {@code outputTokens} deltas, in ms: the latency model's prefill before the first, a decode
   * step (of a batch of one) before each, times the engine's slowdown; a {@code slow_tokens} fault's {@code itl_ms}
   * between deltas on top.
   */
  private long[] steps(RoutingContext ctx, int promptTokens, int outputTokens) {
    SimEngineOptions o = engine.config();
    double slow = engine.slowdown();
    FaultRule fault = ctx.get(FAULT);
    double slowTokens = fault != null && fault.type() == InjectedFault.SLOW_TOKENS ? fault.doubleParam("itl_ms", 0) : 0;
    long[] steps = new long[outputTokens];
    for (int i = 0; i < outputTokens; i++) {
      double ms = (o.getItlMs() + o.getItlPerRunningMs()) * slow + (i == 0 ? 0 : slowTokens);
      if (i == 0) ms += (o.getTtftBaseMs() + o.getTtftPerPromptTokenMs() * promptTokens) * slow;
      steps[i] = Math.round(ms);
    }
    return steps;
  }

  private static void later(RoutingContext ctx, long ms, Runnable action) {
    if (ms < 1) action.run(); else ctx.vertx().setTimer(ms, t -> action.run());
  }

  /** {@code GET /v1/responses/{response_id}}: the stored response as it was answered, or vLLM's 404. */
  void retrieve(RoutingContext ctx) {
    String id = ctx.pathParam("response_id");
    if (!arrived(ctx, "/v1/responses/" + id, null)) return;
    Stored stored;
    synchronized (conversations) {
      stored = conversations.get(id);
    }
    if (stored == null) {
      reply(ctx, 404, notFound(id).toJson());
      return;
    }
    reply(ctx, 200, stored.response());
  }

  /**
   * {@code POST /v1/responses/{response_id}/cancel}: vLLM cancels only a background response still queued or in
   * progress; the simulator runs none in the background, so a stored response gets vLLM's 400
   * {@code Cannot cancel a synchronous response.} and an unknown one its 404.
   */
  void cancel(RoutingContext ctx) {
    String id = ctx.pathParam("response_id");
    if (!arrived(ctx, "/v1/responses/" + id + "/cancel", null)) return;
    boolean known;
    synchronized (conversations) {
      known = conversations.containsKey(id);
    }
    if (!known) {
      reply(ctx, 404, notFound(id).toJson());
      return;
    }
    reply(ctx, 400, new ApiError(400, "Cannot cancel a synchronous response.", "invalid_request_error", null).toJson());
  }

  private static ApiError notFound(String id) {
    return new ApiError(404, "Response with id '" + id + "' not found.", "invalid_request_error", "response_id");
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
    if (body == null) {
      engine.log().record(path, ctx.request().getHeader("x-request-id"), "whole", null);
      reply(ctx, 400, ApiError.badRequest("The request body must be a JSON object.", null).toJson());
      return null;
    }
    return arrived(ctx, path, body) ? body : null;
  }

  /**
   * Logs the request (with the {@code traceparent} it carried) and takes the fault it meets, a decode-phase rule
   * (these endpoints run whole, no handoff): one that ends the request before its answer is applied here (false: the
   * request is answered); one that cuts the answer is left for the route, and for {@link #reply}.
   */
  private boolean arrived(RoutingContext ctx, String path, JsonObject body) {
    JsonObject entry = engine.log().record(path, ctx.request().getHeader("x-request-id"), "whole", body);
    engine.log().update(entry, "traceparent", ctx.request().getHeader("traceparent"));
    FaultRule fault = engine.faults().take("decode", false, body != null && body.getValue("model") instanceof String m ? m : null);
    if (fault == null) return true;
    engine.log().update(entry, "fault", fault.kind());
    switch (fault.type()) {
      case STATUS -> {
        int status = fault.intParam("status", 500);
        reply(ctx, status, new ApiError(status, fault.stringParam("message", "injected fault: HTTP " + status),
            fault.stringParam("type", null), null).toJson());
        return false;
      }
      case QUEUE_FULL -> {
        reply(ctx, 503, ApiError.queueFull().toJson());
        return false;
      }
      case REFUSE -> {
        engine.refuse(fault.hasParam("seconds") ? fault.doubleParam("seconds", 0) : -1);
        ctx.request().connection().close();
        return false;
      }
      case HANG_BEFORE_HEADERS -> {
        return false;
      }
      case HANG_AFTER_HEADERS -> {
        boolean stream = body != null && Boolean.TRUE.equals(body.getValue("stream"));
        ctx.response().setStatusCode(200).setChunked(true)
            .putHeader("content-type", stream ? "text/event-stream; charset=utf-8" : "application/json").writeHead();
        return false;
      }
      case RESET -> {
        if (fault.intParam("after", 0) == 0) {
          ctx.request().connection().close();
          return false;
        }
      }
      default -> {
      }
    }
    ctx.put(FAULT, fault);
    return true;
  }

  private static String hex() {
    return UUID.randomUUID().toString().replace("-", "");
  }

  /**
   * Answers {@code body}; a 200 under a fault that cuts the output ({@code close_before_done}, {@code reset} with
   * {@code after}) stops after half of it and closes the connection, under {@code silence_after} it is never sent.
   */
  private static void reply(RoutingContext ctx, int status, JsonObject body) {
    FaultRule fault = ctx.get(FAULT);
    InjectedFault kind = fault == null || status != 200 ? null : fault.type();
    if (kind == InjectedFault.SILENCE_AFTER) return;
    if (kind == InjectedFault.CLOSE_BEFORE_DONE || kind == InjectedFault.RESET) {
      String text = body.encode();
      ctx.response().setStatusCode(200).setChunked(true).putHeader("content-type", "application/json")
          .write(text.substring(0, text.length() / 2));
      ctx.request().connection().close();
      return;
    }
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(body.encode());
  }
}
