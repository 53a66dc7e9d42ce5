package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A replica's prefix placements since its last exchange ({@link Addresses#PLACEMENT_PREFIXES}): for each prefix
 * affinity, the producer that now caches its KV blocks, and the url each named producer had on the sending replica
 * when it placed there (a receiver that has the engine at another url, re-pointed before or after, learns nothing
 * of it). Its JSON is {@code {"origin", "placed": {affinity: iid}, "urls": {iid: url}}}.
 */
public record PrefixesPlaced(String origin, Map<String, String> placed, Map<String, String> urls) {
  public PrefixesPlaced {
    placed = Map.copyOf(placed);
    urls = Map.copyOf(urls);
  }

  public JsonObject toJson() {
    JsonObject out = new JsonObject();
    placed.forEach(out::put);
    JsonObject engines = new JsonObject();
    urls.forEach(engines::put);
    return new JsonObject().put("origin", origin).put("placed", out).put("urls", engines);
  }

  /** The message in {@code json}; entries that are not text are left out, a body without an origin is null. */
  public static PrefixesPlaced fromJson(JsonObject json) {
    if (json == null || !(json.getValue("origin") instanceof String origin)) return null;
    return new PrefixesPlaced(origin, texts(json.getValue("placed")), texts(json.getValue("urls")));
  }

  private static Map<String, String> texts(Object entries) {
    Map<String, String> out = new LinkedHashMap<>();
    if (entries instanceof JsonObject object) {
      object.forEach(e -> {
        if (e.getValue() instanceof String text && !text.isEmpty()) out.put(e.getKey(), text);
      });
    }
    return out;
  }
}
