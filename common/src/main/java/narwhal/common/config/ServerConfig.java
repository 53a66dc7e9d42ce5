package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/**
 * Where the router's OpenAI-compatible HTTP server listens (port 0 lets the OS pick one) and who may use it.
 * {@code event_loops} (default: the number of available processors) is how many event
 * loops serve it; read at start only. {@code api_key_env} names the environment variable holding the client API
 * keys (comma-separated; "" = {@code /v1/*} open), {@code ops_token_env} the one holding the bearer token that
 * {@code /metrics} and {@code /narwhal/state} then need ("" = open). The keys themselves never appear in the file.
 * {@code cors} is cross-origin access as vLLM allows it ({@link CorsConfig}). {@code health_port} (default
 * {@link #NO_HEALTH_PORT}, none) is a port of its own for {@code /health} and {@code /ready}, answered by a thread
 * the client traffic never holds up, for a balancer's health checks. {@code idle_timeout_s} closes a client connection
 * that has no request in flight for that long (0 = never); {@code max_connections} caps the client connections open at
 * once ({@link #AUTO_MAX_CONNECTIONS}: the process's descriptor limit less a reserve), a connection past it closed as
 * it arrives. Both are read as connections arrive and go idle, so a reload applies to what happens next.
 * {@code api_key_file} and {@code ops_token_file} take the keys from a file instead (re-read when it changes).
 */
public record ServerConfig(String host, int port, int eventLoops, String apiKeyEnv, String opsTokenEnv, CorsConfig cors,
                           int healthPort, double idleTimeoutS, int maxConnections, String apiKeyFile, String opsTokenFile) {

  /** {@code server.health_port} unset: {@code /health} and {@code /ready} are answered on the client port only. */
  public static final int NO_HEALTH_PORT = -1;
  public static final String DEFAULT_HOST = "0.0.0.0";
  public static final int DEFAULT_PORT = 8000;
  /** nginx's {@code keepalive_timeout}: longer than a balancer's own idle timeout (AWS ALB's 60 s), so it closes first. */
  public static final double DEFAULT_IDLE_TIMEOUT_S = 75;
  /** {@code server.max_connections} 0: the cap follows the process's descriptor limit, keeping a reserve. */
  public static final int AUTO_MAX_CONNECTIONS = 0;
  static final String ENV_NAME_EXPECTATION = "\"\" or an environment variable name (letters, digits, _)";

  static final Key<ServerConfig, String> HOST = Key.nonEmpty("host", ServerConfig::host, DEFAULT_HOST).readAtStart();
  static final Key<ServerConfig, Integer> PORT = Key.integer("port", ServerConfig::port, DEFAULT_PORT, 0, 65535)
      .readAtStart();
  static final Key<ServerConfig, Integer> EVENT_LOOPS = Key.integer("event_loops", ServerConfig::eventLoops,
      Runtime.getRuntime().availableProcessors(), 1, Integer.MAX_VALUE).readAtStart();
  static final Key<ServerConfig, String> API_KEY_ENV = Key.text("api_key_env", ServerConfig::apiKeyEnv, "",
      ServerConfig::isEnvName, ENV_NAME_EXPECTATION);
  static final Key<ServerConfig, String> OPS_TOKEN_ENV = Key.text("ops_token_env", ServerConfig::opsTokenEnv, "",
      ServerConfig::isEnvName, ENV_NAME_EXPECTATION);
  static final Key<ServerConfig, String> API_KEY_FILE = Key.string("api_key_file", ServerConfig::apiKeyFile, "");
  static final Key<ServerConfig, String> OPS_TOKEN_FILE = Key.string("ops_token_file", ServerConfig::opsTokenFile, "");
  static final Key<ServerConfig, CorsConfig> CORS = Key.section("cors", ServerConfig::cors, CorsConfig.SECTION,
      CorsConfig::read);
  static final Key<ServerConfig, Integer> HEALTH_PORT = Key.integer("health_port", ServerConfig::healthPort,
      NO_HEALTH_PORT, NO_HEALTH_PORT, 65535).readAtStart();
  static final Key<ServerConfig, Double> IDLE_TIMEOUT_S = Key.seconds("idle_timeout_s", ServerConfig::idleTimeoutS,
      DEFAULT_IDLE_TIMEOUT_S, v -> v == 0 || (v >= 0.01 && v <= 86_400), "0 (never) or a number from 0.01 to 86400");
  static final Key<ServerConfig, Integer> MAX_CONNECTIONS = Key.integer("max_connections", ServerConfig::maxConnections,
      AUTO_MAX_CONNECTIONS, 0, Integer.MAX_VALUE);

  static final Section<ServerConfig> SECTION = new Section<>(HOST, PORT, EVENT_LOOPS, API_KEY_ENV, API_KEY_FILE,
      OPS_TOKEN_ENV, OPS_TOKEN_FILE, CORS, HEALTH_PORT, IDLE_TIMEOUT_S, MAX_CONNECTIONS);

  public static ServerConfig defaults() {
    return read(SectionReader.empty("server", SECTION));
  }

  static ServerConfig read(SectionReader r) {
    int port = r.get(PORT);
    int healthPort = r.get(HEALTH_PORT);
    // the same port twice would fail at start as "already in use", after preflight, naming no cause
    if (healthPort > 0 && healthPort == port) {
      throw r.invalid(HEALTH_PORT.name(), "-1 (none), 0 (the OS picks one) or a port other than server.port (" + port
          + "), which the client traffic takes");
    }
    String apiKeyEnv = r.get(API_KEY_ENV);
    String apiKeyFile = r.get(API_KEY_FILE);
    SecretRef.notBoth("server.api_key_file", apiKeyFile, "server.api_key_env", apiKeyEnv);
    String opsTokenEnv = r.get(OPS_TOKEN_ENV);
    String opsTokenFile = r.get(OPS_TOKEN_FILE);
    SecretRef.notBoth("server.ops_token_file", opsTokenFile, "server.ops_token_env", opsTokenEnv);
    return new ServerConfig(r.get(HOST), port, r.get(EVENT_LOOPS), apiKeyEnv, opsTokenEnv,
        r.get(CORS), healthPort, r.get(IDLE_TIMEOUT_S), r.get(MAX_CONNECTIONS), apiKeyFile, opsTokenFile);
  }

  /** Where the client API keys come from ({@code api_key_file} or {@code api_key_env}). */
  public SecretRef apiKey() {
    return new SecretRef("server.api_key_file", apiKeyFile, "server.api_key_env", apiKeyEnv);
  }

  /** Where the ops token comes from ({@code ops_token_file} or {@code ops_token_env}). */
  public SecretRef opsToken() {
    return new SecretRef("server.ops_token_file", opsTokenFile, "server.ops_token_env", opsTokenEnv);
  }

  /** {@code idle_timeout_s} in milliseconds; 0 when idle connections stay open. */
  public long idleTimeoutMs() {
    return Math.round(idleTimeoutS * 1000);
  }

  static boolean isEnvName(String name) {
    return name.isEmpty() || name.matches("[A-Za-z_][A-Za-z0-9_]*");
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
