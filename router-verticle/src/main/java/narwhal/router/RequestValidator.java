package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.Optional;

/**
 * Checks a client's completion or chat body at the edge (docs/errors.md): the fields the router relies on must
 * have the right types and {@code n} and {@code best_of} must be 1 (a batch of prompts is served, {@link PromptBatch}); whether an engine serves the model is placement's
 * answer ({@code model_not_found}). Numbers are
 * taken as vLLM's validation takes them ({@link LaxNumbers}: {@code "8"} and {@code 8.0} are the integer 8). Other
 * fields pass through to the engines untouched, but for a client's {@code kv_transfer_params} (top-level or in
 * {@code vllm_xargs}), which no engine receives: {@code narwhal.engines.client.InternalFields} drops it from every body
 * the engine client sends.
 */
final class RequestValidator {
  private RequestValidator() {
  }

  static Optional<EdgeError> check(JsonObject body, boolean chat) {
    Object m = body.getValue("model");
    if (m != null && !(m instanceof String s && !s.isEmpty())) return invalid("model", "a non-empty string");
    if (chat) {
      if (!(body.getValue("messages") instanceof JsonArray messages) || messages.isEmpty()) {
        return invalid("messages", "a non-empty array of message objects");
      }
      for (Object message : messages) {
        if (!(message instanceof JsonObject o) || !(o.getValue("role") instanceof String)) {
          return invalid("messages", "a non-empty array of message objects, each with a string role");
        }
      }
    } else if (!validPrompt(body.getValue("prompt"))) {
      return invalid("prompt", "a non-empty string or array of strings or token ids");
    }
    Object stream = body.getValue("stream");
    if (stream != null && !(stream instanceof Boolean)) return invalid("stream", "a boolean");
    Object streamOptions = body.getValue("stream_options");
    if (streamOptions != null && !(streamOptions instanceof JsonObject)) return invalid("stream_options", "an object");
    if (streamOptions != null && !Boolean.TRUE.equals(stream)) {
      return Optional.of(EdgeError.invalid("Stream options can only be defined when `stream=True`.", "stream_options"));
    }
    for (String field : new String[] {"max_tokens", "max_completion_tokens"}) {
      Object v = body.getValue(field);
      Long limit = LaxNumbers.integer(v);
      if (v != null && limit == null) return invalid(field, "an integer >= 1");
      // vLLM's sampling check of the limit, in its words
      if (limit != null && limit < 1) return Optional.of(EdgeError.invalid("max_tokens must be at least 1, got " + limit + ".", field));
    }
    for (String field : new String[] {"n", "best_of"}) {
      Object v = body.getValue(field);
      if (v != null && !Long.valueOf(1).equals(LaxNumbers.integer(v))) {
        return Optional.of(EdgeError.invalid(field + ": must be 1: disaggregated serving produces one choice", field));
      }
    }
    for (String field : new String[] {"temperature", "top_p", "presence_penalty", "frequency_penalty"}) {
      Object v = body.getValue(field);
      if (v != null && !LaxNumbers.isNumber(v)) return invalid(field, "a number");
    }
    Object seed = body.getValue("seed");
    if (seed != null && LaxNumbers.integer(seed) == null) return invalid("seed", "an integer");
    Optional<EdgeError> promptLogprobs = promptLogprobs(body.getValue("prompt_logprobs"), Boolean.TRUE.equals(stream));
    if (promptLogprobs.isPresent()) return promptLogprobs;
    return minTokens(body, chat);
  }

  /**
   * vLLM's checks of {@code prompt_logprobs} (its request models' {@code check_logprobs}), made here because the
   * router's decode leg is always streamed: an integer, positive or -1, and none of them (0 aside, which asks for
   * nothing beyond the prompt token) for a streaming client.
   */
  private static Optional<EdgeError> promptLogprobs(Object v, boolean stream) {
    if (v == null) return Optional.empty();
    Long asked = v instanceof Number ? LaxNumbers.integer(v) : null;
    if (asked == null) return Optional.of(EdgeError.invalid("`prompt_logprobs` must be an integer.", "prompt_logprobs"));
    if (stream && (asked > 0 || asked == -1)) {
      return Optional.of(EdgeError.invalid("`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs"));
    }
    if (asked < 0 && asked != -1) {
      return Optional.of(EdgeError.invalid("`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs"));
    }
    return Optional.empty();
  }

  /**
   * vLLM's sampling checks of {@code min_tokens} (its {@code SamplingParams}), which the decode engine would make only
   * after the prefill: an integer, at least 0, and no more than the request's output limit when it sets one
   * ({@code max_completion_tokens}, else {@code max_tokens}). Without a limit, {@link ContextFit} checks it against
   * the limit vLLM derives.
   */
  private static Optional<EdgeError> minTokens(JsonObject body, boolean chat) {
    Object v = body.getValue("min_tokens");
    if (v == null) return Optional.empty();
    Long min = LaxNumbers.integer(v);
    if (min == null) return invalid("min_tokens", "an integer");
    if (min < 0) return Optional.of(EdgeError.invalid("min_tokens must be greater than or equal to 0, got " + min + ".", null));
    Long limit = outputLimit(body, chat);
    if (limit != null && min > limit) return Optional.of(minAboveLimit(limit, min));
    return Optional.empty();
  }

  static EdgeError minAboveLimit(long limit, long min) {
    return EdgeError.invalid("min_tokens must be less than or equal to max_tokens=" + limit + ", got " + min + ".", null);
  }

  /** The client's output limit as vLLM reads it: chat's {@code max_completion_tokens}, else {@code max_tokens}; null: none. */
  static Long outputLimit(JsonObject body, boolean chat) {
    Long completion = chat ? LaxNumbers.integer(body.getValue("max_completion_tokens")) : null;
    return completion != null ? completion : LaxNumbers.integer(body.getValue("max_tokens"));
  }

  /**
   * How many prompts a completions {@code prompt} holds: a list of strings or of token-id lists is a batch, one
   * each; a string or a list of token ids is one. vLLM answers a batched prefill with a single handoff descriptor,
   * so a batch runs as one {@link PromptBatch} part per prompt.
   */
  static int batch(Object prompt) {
    if (!(prompt instanceof JsonArray items)) return 1;
    return items.stream().allMatch(i -> i instanceof String || i instanceof JsonArray) ? items.size() : 1;
  }

  /**
   * A prompt the router serves: a string, a list of token ids, or a batch (a list of strings and token-id lists,
   * {@link #batch}). A batch's prompts must each be non-empty, as a lone prompt must: a batch is refused whole, before
   * any leg, rather than one of its prompts failing after the others' prefills (their KV would stay to the lease).
   */
  private static boolean validPrompt(Object prompt) {
    if (prompt instanceof String s) return !s.isEmpty();
    if (!(prompt instanceof JsonArray items) || items.isEmpty()) return false;
    boolean batch = items.stream().allMatch(i -> i instanceof String || i instanceof JsonArray);
    for (Object item : items) {
      if (batch && item instanceof String s && s.isEmpty()) return false;
      if (item instanceof JsonArray ids && (ids.isEmpty() || !ids.stream().allMatch(t -> LaxNumbers.integer(t) != null))) return false;
      if (!batch && !(item instanceof String) && LaxNumbers.integer(item) == null && !(item instanceof JsonArray)) return false;
    }
    return true;
  }

  private static Optional<EdgeError> invalid(String field, String expected) {
    return Optional.of(EdgeError.invalid(field + ": expected " + expected, field));
  }
}
