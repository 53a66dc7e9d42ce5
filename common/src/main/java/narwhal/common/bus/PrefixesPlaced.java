package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A replica's prefix placements since its last exchange ({@link Addresses#PLACEMENT_PREFIXES}): for each prefix
 * affinity, the producer that now caches its KV blocks. Its JSON is {@code {"origin", "placed": {affinity: iid}}}.
 */
public record PrefixesPlaced(String origin, Map<String, String> placed) {
  public PrefixesPlaced {
    placed = Map.copyOf(placed);
  }

  public JsonObject toJson() {
    JsonObject out = new JsonObject();
    placed.forEach(out::put);
    return new JsonObject().put("origin", origin).put("placed", out);
  }

  /** The message in {@code json}; entries that are not text are left out, a body without an origin is null. */
  public static PrefixesPlaced fromJson(JsonObject json) {
    if (json == null || !(json.getValue("origin") instanceof String origin)) return null;
    Map<String, String> placed = new LinkedHashMap<>();
    if (json.getValue("placed") instanceof JsonObject entries) {
      entries.forEach(e -> {
        if (e.getValue() instanceof String iid && !iid.isEmpty()) placed.put(e.getKey(), iid);
      });
    }
    return new PrefixesPlaced(origin, placed);
  }
}
