package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * How the router talks to every engine: per-leg timeouts (a first token must come within
 * {@code first_token_timeout_s}; a decode stream may be silent for at most
 * {@code decode_read_timeout_s}, 0 leaving it to the request deadline), the connection pool to each engine, how
 * long a prefilled KV cache stays leased, the KV connector, and where the engines' API key comes from (a file or an env var; neither: none).
 */
public record EngineSettings(
    double firstTokenTimeoutS,
    double decodeReadTimeoutS,
    double connectTimeoutS,
    int maxConnectionsPerEngine,
    double healthTimeoutS,
    double kvLeaseS,
    String connector,
    String engineApiKeyEnv,
    String engineApiKeyFile) {

  public static final double DEFAULT_FIRST_TOKEN_TIMEOUT_S = 2.5;
  public static final double DEFAULT_DECODE_READ_TIMEOUT_S = 10;
  public static final double DEFAULT_CONNECT_TIMEOUT_S = 10;
  /** As many as the default in-flight limit, so one engine can carry every admitted request. */
  public static final int DEFAULT_MAX_CONNECTIONS_PER_ENGINE = ServingConfig.DEFAULT_MAX_IN_FLIGHT;
  public static final double DEFAULT_HEALTH_TIMEOUT_S = 5;
  public static final double DEFAULT_KV_LEASE_S = 30;
  public static final String NIXL = "nixl";

  static final Key<EngineSettings, Double> FIRST_TOKEN_TIMEOUT_S = Key.positiveSeconds("first_token_timeout_s",
      EngineSettings::firstTokenTimeoutS, DEFAULT_FIRST_TOKEN_TIMEOUT_S);
  static final Key<EngineSettings, Double> DECODE_READ_TIMEOUT_S = Key.nonNegativeSeconds("decode_read_timeout_s",
      EngineSettings::decodeReadTimeoutS, DEFAULT_DECODE_READ_TIMEOUT_S);
  static final Key<EngineSettings, Double> CONNECT_TIMEOUT_S = Key.positiveSeconds("connect_timeout_s",
      EngineSettings::connectTimeoutS, DEFAULT_CONNECT_TIMEOUT_S);
  /** The HTTP/1 pool to each engine, sized when the router starts. */
  static final Key<EngineSettings, Integer> MAX_CONNECTIONS_PER_ENGINE = Key.integer("max_connections_per_engine",
      EngineSettings::maxConnectionsPerEngine, DEFAULT_MAX_CONNECTIONS_PER_ENGINE, 1, Integer.MAX_VALUE).readAtStart();
  /** Never read by the engine client; kept so older files load. */
  static final Key<EngineSettings, Double> POOL_TIMEOUT_S = Key.<EngineSettings>positiveSeconds("pool_timeout_s", e -> null, 5.0)
      .replacedBy("it never had an effect; remove it (engine.connect_timeout_s bounds a connect)");
  static final Key<EngineSettings, Double> HEALTH_TIMEOUT_S = Key.positiveSeconds("health_timeout_s",
      EngineSettings::healthTimeoutS, DEFAULT_HEALTH_TIMEOUT_S);
  static final Key<EngineSettings, Double> KV_LEASE_S = Key.nonNegativeSeconds("kv_lease_s",
      EngineSettings::kvLeaseS, DEFAULT_KV_LEASE_S);
  static final Key<EngineSettings, String> CONNECTOR = Key.oneOf("connector", EngineSettings::connector, NIXL,
      List.of(NIXL));
  /** Never read: vLLM's is the only dialect; kept so older files load. */
  static final Key<EngineSettings, String> DIALECT = Key.<EngineSettings>oneOf("dialect", e -> null, "vllm", List.of("vllm"))
      .replacedBy("it never had an effect (vLLM's request dialect is the only one); remove it");
  static final Key<EngineSettings, String> ENGINE_API_KEY_ENV = Key.string("engine_api_key_env",
      EngineSettings::engineApiKeyEnv, "");

  static final Key<EngineSettings, String> ENGINE_API_KEY_FILE = Key.string("engine_api_key_file",
      EngineSettings::engineApiKeyFile, "");

  static final Section<EngineSettings> SECTION = new Section<>(FIRST_TOKEN_TIMEOUT_S, DECODE_READ_TIMEOUT_S,
      CONNECT_TIMEOUT_S, MAX_CONNECTIONS_PER_ENGINE, POOL_TIMEOUT_S, HEALTH_TIMEOUT_S, KV_LEASE_S, CONNECTOR, DIALECT,
      ENGINE_API_KEY_ENV, ENGINE_API_KEY_FILE);

  public static EngineSettings defaults() {
    return read(SectionReader.empty("engine", SECTION), null);
  }

  /** {@code legacyMaxConnections}: an older file's {@code serving.max_connections}, the pool size unless set here. */
  static EngineSettings read(SectionReader r, Integer legacyMaxConnections) {
    double firstToken = r.get(FIRST_TOKEN_TIMEOUT_S);
    double decodeRead = r.get(DECODE_READ_TIMEOUT_S);
    double connect = r.get(CONNECT_TIMEOUT_S);
    int perEngine = legacyMaxConnections != null && !r.has(MAX_CONNECTIONS_PER_ENGINE.name())
        ? legacyMaxConnections : r.get(MAX_CONNECTIONS_PER_ENGINE);
    r.get(POOL_TIMEOUT_S);
    double health = r.get(HEALTH_TIMEOUT_S);
    double kvLease = r.get(KV_LEASE_S);
    String connector = r.get(CONNECTOR);
    r.get(DIALECT);
    String keyEnv = r.get(ENGINE_API_KEY_ENV);
    String keyFile = r.get(ENGINE_API_KEY_FILE);
    SecretRef.notBoth("engine.engine_api_key_file", keyFile, "engine.engine_api_key_env", keyEnv);
    return new EngineSettings(firstToken, decodeRead, connect, perEngine, health, kvLease, connector, keyEnv, keyFile);
  }

  public long firstTokenTimeoutMs() {
    return Seconds.toMillis(firstTokenTimeoutS);
  }

  /** 0 when the decode stream is bounded only by the request deadline. */
  public long decodeReadTimeoutMs() {
    return Seconds.toMillis(decodeReadTimeoutS);
  }

  public long connectTimeoutMs() {
    return Seconds.toMillis(connectTimeoutS);
  }

  public long healthTimeoutMs() {
    return Seconds.toMillis(healthTimeoutS);
  }

  public long kvLeaseMs() {
    return Seconds.toMillis(kvLeaseS);
  }

  /** Where the engines' API key comes from ({@code engine_api_key_file} or {@code engine_api_key_env}). */
  public SecretRef engineApiKey() {
    return new SecretRef("engine.engine_api_key_file", engineApiKeyFile, "engine.engine_api_key_env", engineApiKeyEnv);
  }

  /**
   * The engines' API key, read through {@code secrets} (a {@link narwhal.common.auth.SecretFiles} or an environment);
   * empty when none is configured or it is unset (requests then carry no key).
   */
  public String engineApiKey(UnaryOperator<String> secrets) {
    String name = engineApiKey().lookupName();
    if (name == null) return "";
    String value = secrets.apply(name);
    return value == null ? "" : value.trim();
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }

  /**
   * The bound of the breaker's lifecycle checks of one engine (three health-bounded reads, a generation and a KV
   * transfer): a probe lease lasts this long, and a check of a re-pointed engine's new entry is waited for this long.
   */
  public long lifecycleCheckBoundMs() {
    return 3 * healthTimeoutMs() + 4 * firstTokenTimeoutMs() + decodeReadTimeoutMs() + 1_000;
  }
}
