package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Reservation;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Whether a request's prompt and output limit fit the model's context, decided before any leg is sent
 * (docs/vllm.md#context-length): a prefill of a request the decode engine will refuse would hold the producer's KV
 * blocks until their lease ends. Without an output limit vLLM's is what the context leaves after the prompt, so the
 * prompt alone must fit, with the client's request (not the prefill leg's one token) named in the refusal; a
 * completions request without one has vLLM's default of 16. Settled
 * without asking an engine where the request allows — a limit above the context, a prompt of token ids (counted exactly), or a
 * text prompt whose UTF-8 size bounds its tokens well inside the context — else by the producer's own
 * {@code POST /tokenize} (with {@code messages}, so the chat template counts). A request that does not fit gets
 * vLLM's own 400 (v0.18–v0.30 wording). When no engine reported its context, or {@code /tokenize} fails (an
 * engine without it), the request proceeds as without this check; a {@code /tokenize} that stays silent past the
 * prefill's bound is the producer's timeout.
 */
final class ContextFit {
  private static final Logger LOG = Logger.getLogger(ContextFit.class.getName());
  /** Chat fields vLLM's {@code /tokenize} takes that change what the chat template renders. */
  private static final String[] CHAT_TEMPLATE_FIELDS = {"tools", "chat_template", "chat_template_kwargs",
      "add_generation_prompt", "continue_final_message", "add_special_tokens"};

  /** vLLM's {@code max_tokens} for a completions request that sets none. */
  static final int COMPLETION_DEFAULT_MAX_TOKENS = 16;

  private ContextFit() {
  }

  /**
   * The refusal for {@code request} if it cannot fit, checked on {@code producer}; empty when it fits or cannot be told.
   * Its {@code /tokenize} is part of the prefill phase: bounded by {@code boundMs} (the prefill leg's timeout or the
   * request's deadline, whichever ends first) and reset when {@code cancel} completes; past the bound the check fails
   * with the producer's {@link FaultKind#PREFILL_TIMEOUT} fault.
   */
  static Future<Optional<EdgeError>> check(RouterContext ctx, InferenceRequest request, Reservation producer, long boundMs,
                                           Future<?> cancel) {
    JsonObject body = request.body();
    String limitKey = request.chat() && body.getValue("max_completion_tokens") != null ? "max_completion_tokens" : "max_tokens";
    Long sent = LaxNumbers.integer(body.getValue(limitKey));
    // vLLM's CompletionRequest defaults max_tokens to 16 (protocol.py); chat's default is what the context leaves
    Long asked = sent == null && !request.chat() ? Long.valueOf(COMPLETION_DEFAULT_MAX_TOKENS) : sent;
    Integer context = ctx.facts().smallestContext(BaseModels.enginesLike(ctx.config().get(), producer.iid()));
    if (context == null) return Future.succeededFuture(Optional.empty());
    // no output limit: vLLM's is what the context leaves after the prompt, so the prompt alone must fit (and leave one)
    long limit = asked == null ? 0 : asked;
    if (limit > context) return Future.succeededFuture(Optional.of(outputTooLarge(limitKey, limit, context)));
    long spare = asked == null ? 1 : 0;
    if (!request.chat()) {
      Object prompt = body.getValue("prompt");
      if (prompt instanceof JsonArray items && items.size() == 1 && items.getValue(0) instanceof JsonArray inner) prompt = inner;
      if (prompt instanceof JsonArray ids && !ids.isEmpty() && ids.stream().allMatch(t -> LaxNumbers.integer(t) != null)) {
        return Future.succeededFuture(verdict(context, limit, ids.size(), true, asked == null));
      }
      if (prompt instanceof JsonArray one && one.size() == 1 && one.getValue(0) instanceof String s) prompt = s;
      EngineFacts.Context known = ctx.facts().context(producer.iid());
      if (prompt instanceof String text && known != null && known.oneCharTokens() != null
          && text.getBytes(StandardCharsets.UTF_8).length + (long) known.oneCharTokens() + limit + spare <= context) {
        return Future.succeededFuture(Optional.empty());
      }
    }
    return ctx.engines().tokenize(producer.url(), tokenizeBody(request, request.model()), request.rid() + "-tokenize", boundMs,
            cancel)
        .map(answer -> {
          if (!(answer.getValue("count") instanceof Number count)) return Optional.<EdgeError>empty();
          int window = context;
          if (answer.getValue("max_model_len") instanceof Number n && n.intValue() > 0) {
            ctx.facts().maxModelLen(producer.iid(), n.intValue(), EngineFacts.FROM_TOKENIZE);
            window = Math.min(window, n.intValue());
          }
          if (limit > window) return Optional.of(outputTooLarge(limitKey, limit, window));
          return verdict(window, limit, count.longValue(), false, asked == null);
        })
        .recover(err -> {
          if (err instanceof EngineFault fault && fault.kind() == FaultKind.PREFILL_TIMEOUT) return Future.failedFuture(fault);
          LOG.fine(() -> request.rid() + ": /tokenize on " + producer.iid() + " did not answer (" + err.getMessage()
              + "); the request goes on unchecked");
          return Future.succeededFuture(Optional.<EdgeError>empty());
        });
  }

  /** What vLLM's {@code /tokenize} needs to count the prompt this request's generation would: chat with its template. */
  static JsonObject tokenizeBody(InferenceRequest request, String model) {
    JsonObject body = request.body();
    JsonObject out = new JsonObject().put("model", model);
    if (!request.chat()) {
      Object prompt = body.getValue("prompt");
      return out.put("prompt", prompt instanceof JsonArray one ? one.getValue(0) : prompt);
    }
    out.put("messages", body.getValue("messages"));
    for (String field : CHAT_TEMPLATE_FIELDS) {
      if (body.containsKey(field)) out.put(field, body.getValue(field));
    }
    return out;
  }

  /**
   * vLLM's refusal of a prompt longer than {@code context − limit} tokens. vLLM tokenizes text only up to one token
   * past that room, so it names that many "at least"; a prompt of token ids is counted exactly.
   */
  static Optional<EdgeError> verdict(int context, long limit, long promptTokens, boolean exact) {
    return verdict(context, limit, promptTokens, exact, false);
  }

  /**
   * As {@link #verdict(int, long, long, boolean)}; {@code noLimit}: the client set no output limit, so vLLM's is
   * {@code context − prompt}: a prompt longer than the context is refused with "0 output tokens", and one that fills
   * it exactly leaves vLLM an output limit of 0, which its sampling check refuses.
   */
  static Optional<EdgeError> verdict(int context, long limit, long promptTokens, boolean exact, boolean noLimit) {
    long room = context - limit;
    if (noLimit && promptTokens == context) return Optional.of(EdgeError.contextLength("max_tokens must be at least 1, got 0.", "max_tokens"));
    if (promptTokens <= room) return Optional.empty();
    long counted = exact ? promptTokens : room + 1;
    String atLeast = exact ? "" : "at least ";
    return Optional.of(EdgeError.contextLength("This model's maximum context length is " + context + " tokens. However, you "
        + "requested " + limit + " output tokens and your prompt contains " + atLeast + counted + " input tokens, for a total "
        + "of " + atLeast + (counted + limit) + " tokens. Please reduce the length of the input prompt or the number of "
        + "requested output tokens. (parameter=input_tokens, value=" + counted + ")", "input_tokens"));
  }

  static EdgeError outputTooLarge(String limitKey, long limit, int context) {
    return EdgeError.contextLength(limitKey + "=" + limit + " cannot be greater than max_model_len=max_total_tokens=" + context
        + ". Please request fewer output tokens. (parameter=" + limitKey + ", value=" + limit + ")", limitKey);
  }
}
