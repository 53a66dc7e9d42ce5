package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.Optional;

/**
 * Checks a client's completion or chat body at the edge (docs/errors.md): the fields the router relies on must
 * have the right types, {@code n} and {@code best_of} must be 1, and the model must be the fleet's. Other
 * fields pass through to the engines untouched; a client {@code kv_transfer_params} is ignored here and
 * never forwarded.
 */
final class RequestValidator {
  private RequestValidator() {
  }

  static Optional<EdgeError> check(JsonObject body, boolean chat, String model) {
    Object m = body.getValue("model");
    if (m != null && !(m instanceof String)) return invalid("model", "a string");
    if (m instanceof String s && !s.equals(model)) return Optional.of(EdgeError.modelNotFound(s));
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
      return Optional.of(EdgeError.invalid("stream_options: only allowed when stream is true", "stream_options"));
    }
    for (String field : new String[] {"max_tokens", "max_completion_tokens"}) {
      Object v = body.getValue(field);
      if (v != null && !(isInteger(v) && ((Number) v).longValue() >= 1)) return invalid(field, "an integer >= 1");
    }
    for (String field : new String[] {"n", "best_of"}) {
      Object v = body.getValue(field);
      if (v != null && !(isInteger(v) && ((Number) v).longValue() == 1)) {
        return Optional.of(EdgeError.invalid(field + ": must be 1: disaggregated serving produces one choice", field));
      }
    }
    for (String field : new String[] {"temperature", "top_p", "presence_penalty", "frequency_penalty"}) {
      Object v = body.getValue(field);
      if (v != null && !(v instanceof Number)) return invalid(field, "a number");
    }
    Object seed = body.getValue("seed");
    if (seed != null && !isInteger(seed)) return invalid("seed", "an integer");
    return Optional.empty();
  }

  private static boolean validPrompt(Object prompt) {
    if (prompt instanceof String s) return !s.isEmpty();
    if (!(prompt instanceof JsonArray items) || items.isEmpty()) return false;
    for (Object item : items) {
      if (!(item instanceof String) && !isInteger(item) && !(item instanceof JsonArray)) return false;
    }
    return true;
  }

  private static boolean isInteger(Object v) {
    return v instanceof Integer || v instanceof Long;
  }

  private static Optional<EdgeError> invalid(String field, String expected) {
    return Optional.of(EdgeError.invalid(field + ": expected " + expected, field));
  }
}
