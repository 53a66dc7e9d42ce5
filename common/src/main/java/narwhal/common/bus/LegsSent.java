package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A replica's legs sent to each engine since that engine's last load reading ({@link Addresses#PLACEMENT_SENT}), so
 * every replica counts the whole cluster's work between two readings. A count belongs to the reading it follows
 * ({@code reading_ms}): a receiver holding another reading of the engine leaves it out. Its JSON is
 * {@code {"origin", "engines": {iid: {"reading_ms", "sent"}}}}.
 */
public record LegsSent(String origin, Map<String, Count> engines) {
  /** Legs sent to one engine since its reading taken at {@code readingMs} (0: no reading yet). */
  public record Count(long readingMs, int sent) {
  }

  public LegsSent {
    engines = Map.copyOf(engines);
  }

  public JsonObject toJson() {
    JsonObject out = new JsonObject();
    engines.forEach((iid, c) -> out.put(iid, new JsonObject().put("reading_ms", c.readingMs()).put("sent", c.sent())));
    return new JsonObject().put("origin", origin).put("engines", out);
  }

  /**
   * The message in {@code json}; an engine whose entry is not a whole, non-negative reading time and count is left
   * out; a body without an origin is null.
   */
  public static LegsSent fromJson(JsonObject json) {
    if (json == null || !(json.getValue("origin") instanceof String origin) || origin.isEmpty()) return null;
    Map<String, Count> engines = new LinkedHashMap<>();
    if (json.getValue("engines") instanceof JsonObject all) {
      all.forEach(e -> {
        if (e.getValue() instanceof JsonObject c && whole(c.getValue("reading_ms")) && whole(c.getValue("sent"))
            && ((Number) c.getValue("sent")).longValue() <= Integer.MAX_VALUE) {
          engines.put(e.getKey(), new Count(((Number) c.getValue("reading_ms")).longValue(), ((Number) c.getValue("sent")).intValue()));
        }
      });
    }
    return new LegsSent(origin, engines);
  }

  private static boolean whole(Object v) {
    return (v instanceof Integer || v instanceof Long) && ((Number) v).longValue() >= 0;
  }
}
