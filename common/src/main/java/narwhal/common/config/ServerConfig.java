package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/** Where the router's OpenAI-compatible HTTP server listens; port 0 lets the OS pick one. */
public record ServerConfig(String host, int port) {

  static final Set<String> KEYS = Set.of("host", "port");

  public static ServerConfig defaults() {
    return new ServerConfig("0.0.0.0", 8000);
  }

  static ServerConfig read(SectionReader r) {
    ServerConfig d = defaults();
    return new ServerConfig(r.nonEmptyString("host", d.host()), r.integer("port", d.port(), 0, 65535));
  }

  public JsonObject toJson() {
    return new JsonObject().put("host", host).put("port", port);
  }
}
