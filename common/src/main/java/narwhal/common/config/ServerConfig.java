package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Where the router's OpenAI-compatible HTTP server listens; port 0 lets the OS pick one. {@code event_loops}
 * (ours; default: the number of available processors) is how many event loops serve it;
 * read at start only.
 */
public record ServerConfig(String host, int port, int eventLoops) {

  static final Set<String> KEYS = Set.of("host", "port", "event_loops");

  public static ServerConfig defaults() {
    return new ServerConfig("0.0.0.0", 8000, Runtime.getRuntime().availableProcessors());
  }

  static ServerConfig read(SectionReader r) {
    ServerConfig d = defaults();
    return new ServerConfig(r.nonEmptyString("host", d.host()), r.integer("port", d.port(), 0, 65535),
        r.integer("event_loops", d.eventLoops(), 1, Integer.MAX_VALUE));
  }

  public JsonObject toJson() {
    return new JsonObject().put("host", host).put("port", port).put("event_loops", eventLoops);
  }
}
