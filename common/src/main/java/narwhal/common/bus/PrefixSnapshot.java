package narwhal.common.bus;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One chunk of a replica's prefix index, the answer on {@link Addresses#PLACEMENT_SNAPSHOT} to a replica that starts or
 * comes back and missed the exchanges: for each prefix, its homes newest first, least recently used prefix first (the
 * receiver keeps the sender's order), with the url each named producer has on the sender (the same rule as
 * {@link PrefixesPlaced}). {@code more}: the asker replies to this chunk for the next one. Its JSON is
 * {@code {"origin", "prefixes": [[affinity, iid, iid?], …], "urls": {iid: url}, "more"}}.
 */
public record PrefixSnapshot(String origin, List<List<String>> prefixes, Map<String, String> urls, boolean more) {
  public PrefixSnapshot {
    prefixes = List.copyOf(prefixes);
    urls = Map.copyOf(urls);
  }

  public JsonObject toJson() {
    JsonArray entries = new JsonArray(new ArrayList<>(prefixes.size()));
    prefixes.forEach(e -> entries.add(new JsonArray(new ArrayList<>(e))));
    JsonObject engines = new JsonObject();
    urls.forEach(engines::put);
    return new JsonObject().put("origin", origin).put("prefixes", entries).put("urls", engines).put("more", more);
  }

  /** The chunk in {@code json}; an entry without an affinity and a home is left out, a body without an origin is null. */
  public static PrefixSnapshot fromJson(JsonObject json) {
    if (json == null || !(json.getValue("origin") instanceof String origin)) return null;
    List<List<String>> prefixes = new ArrayList<>();
    if (json.getValue("prefixes") instanceof JsonArray entries) {
      for (Object o : entries) {
        if (!(o instanceof JsonArray entry)) continue;
        List<String> texts = new ArrayList<>(entry.size());
        for (Object t : entry) if (t instanceof String text && !text.isEmpty()) texts.add(text);
        if (texts.size() >= 2) prefixes.add(texts);
      }
    }
    Map<String, String> urls = new LinkedHashMap<>();
    if (json.getValue("urls") instanceof JsonObject engines) {
      engines.forEach(e -> {
        if (e.getValue() instanceof String url && !url.isEmpty()) urls.put(e.getKey(), url);
      });
    }
    return new PrefixSnapshot(origin, prefixes, urls, Boolean.TRUE.equals(json.getValue("more")));
  }
}
