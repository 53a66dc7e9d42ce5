package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Every inference request an engine received, oldest first, so tests can check what a router
 * actually sent (body, {@code x-request-id}, {@code authorization} and {@code traceparent} headers, leg) and whether
 * KV was transferred or recomputed.
 * Bounded by {@code requestLogLimit}. Thread-safe; readers get copies.
 */
final class RequestLog {

  private final int limit;
  private final Deque<JsonObject> entries = new ArrayDeque<>();

  RequestLog(int limit) {
    this.limit = limit;
  }

  synchronized JsonObject record(String path, String requestId, String phase, JsonObject body) {
    JsonObject entry = new JsonObject()
      .put("path", path)
      .put("request_id", requestId)
      .put("phase", phase)
      .put("body", body)
      .put("kv", "none")
      .put("fault", null);
    entries.addLast(entry);
    while (limit > 0 && entries.size() > limit) {
      entries.removeFirst();
    }
    return entry;
  }

  synchronized void update(JsonObject entry, String key, Object value) {
    entry.put(key, value);
  }

  synchronized List<JsonObject> snapshot() {
    List<JsonObject> out = new ArrayList<>(entries.size());
    entries.forEach(e -> out.add(e.copy()));
    return out;
  }

  synchronized JsonArray toJson() {
    JsonArray out = new JsonArray();
    entries.forEach(e -> out.add(e.copy()));
    return out;
  }

  synchronized void clear() {
    entries.clear();
  }
}
