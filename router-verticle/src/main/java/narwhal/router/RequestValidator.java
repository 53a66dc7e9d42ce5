package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.Optional;

/**
 * Checks a client's completion or chat body at the edge (docs/errors.md): the fields the router relies on must
 * have the right types and {@code n} and {@code best_of} must be 1 (a batch of prompts is served, {@link PromptBatch}); whether an engine serves the model is placement's
 * answer ({@code model_not_found}). Numbers are
 * taken as vLLM's validation takes them ({@link LaxNumbers}: {@code "8"} and {@code 8.0} are the integer 8). Other
 * fields pass through to the engines untouched; a client {@code kv_transfer_params} is ignored here and
 * never forwarded.
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
      if (v != null && !(limit != null && limit >= 1)) return invalid(field, "an integer >= 1");
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
    return Optional.empty();
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

  private static boolean validPrompt(Object prompt) {
    if (prompt instanceof String s) return !s.isEmpty();
    if (!(prompt instanceof JsonArray items) || items.isEmpty()) return false;
    for (Object item : items) {
      if (!(item instanceof String) && LaxNumbers.integer(item) == null && !(item instanceof JsonArray)) return false;
    }
    return true;
  }

  private static Optional<EdgeError> invalid(String field, String expected) {
    return Optional.of(EdgeError.invalid(field + ": expected " + expected, field));
  }
}
