package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Where the router's OpenAI-compatible HTTP server listens (port 0 lets the OS pick one) and who may use it.
 * {@code event_loops} (ours; default: the number of available processors) is how many event
 * loops serve it; read at start only. {@code api_key_env} names the environment variable holding the client API
 * keys (comma-separated; "" = {@code /v1/*} open), {@code ops_token_env} the one holding the bearer token that
 * {@code /metrics} and {@code /narwhal/state} then need ("" = open). The keys themselves never appear in the file.
 * {@code cors} is cross-origin access as vLLM allows it ({@link CorsConfig}). {@code health_port} (ours; default
 * {@link #NO_HEALTH_PORT}, none) is a port of its own for {@code /health} and {@code /ready}, answered by a thread
 * the client traffic never holds up, for a balancer's health checks.
 */
public record ServerConfig(String host, int port, int eventLoops, String apiKeyEnv, String opsTokenEnv, CorsConfig cors,
                           int healthPort) {

  static final Set<String> KEYS = Set.of("host", "port", "event_loops", "api_key_env", "ops_token_env", "cors", "health_port");
  /** {@code server.health_port} unset: {@code /health} and {@code /ready} are answered on the client port only. */
  public static final int NO_HEALTH_PORT = -1;
  static final String ENV_NAME_EXPECTATION = "\"\" or an environment variable name (letters, digits, _)";

  public static ServerConfig defaults() {
    return new ServerConfig("0.0.0.0", 8000, Runtime.getRuntime().availableProcessors(), "", "", CorsConfig.defaults(),
        NO_HEALTH_PORT);
  }

  static ServerConfig read(SectionReader r) {
    ServerConfig d = defaults();
    return new ServerConfig(r.nonEmptyString("host", d.host()), r.integer("port", d.port(), 0, 65535),
        r.integer("event_loops", d.eventLoops(), 1, Integer.MAX_VALUE),
        r.text("api_key_env", d.apiKeyEnv(), ServerConfig::isEnvName, ENV_NAME_EXPECTATION),
        r.text("ops_token_env", d.opsTokenEnv(), ServerConfig::isEnvName, ENV_NAME_EXPECTATION),
        CorsConfig.read(r.section("cors", CorsConfig.KEYS)), r.integer("health_port", d.healthPort(), NO_HEALTH_PORT, 65535));
  }

  static boolean isEnvName(String name) {
    return name.isEmpty() || name.matches("[A-Za-z_][A-Za-z0-9_]*");
  }

  public JsonObject toJson() {
    return new JsonObject().put("host", host).put("port", port).put("event_loops", eventLoops)
        .put("api_key_env", apiKeyEnv).put("ops_token_env", opsTokenEnv).put("cors", cors.toJson()).put("health_port", healthPort);
  }
}
