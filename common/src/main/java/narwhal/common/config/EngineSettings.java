package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * How the router talks to every engine: per-leg timeouts (a first token must come within
 * {@code first_token_timeout_s}; a decode stream may be silent for at most
 * {@code decode_read_timeout_s}, 0 leaving it to the request deadline), how long a prefilled KV
 * cache stays leased, the KV connector and request dialect, and the env var holding the engines'
 * API key (empty: none).
 */
public record EngineSettings(
    double firstTokenTimeoutS,
    double decodeReadTimeoutS,
    double connectTimeoutS,
    double poolTimeoutS,
    double healthTimeoutS,
    double kvLeaseS,
    String connector,
    String dialect,
    String engineApiKeyEnv) {

  static final Set<String> KEYS = Set.of("first_token_timeout_s", "decode_read_timeout_s",
      "connect_timeout_s", "pool_timeout_s", "health_timeout_s", "kv_lease_s", "connector", "dialect",
      "engine_api_key_env");

  public static EngineSettings defaults() {
    return new EngineSettings(2.5, 10, 10, 5, 5, 30, "nixl", "vllm", "");
  }

  static EngineSettings read(SectionReader r) {
    EngineSettings d = defaults();
    return new EngineSettings(
        r.positive("first_token_timeout_s", d.firstTokenTimeoutS()),
        r.nonNegative("decode_read_timeout_s", d.decodeReadTimeoutS()),
        r.positive("connect_timeout_s", d.connectTimeoutS()),
        r.positive("pool_timeout_s", d.poolTimeoutS()),
        r.positive("health_timeout_s", d.healthTimeoutS()),
        r.nonNegative("kv_lease_s", d.kvLeaseS()),
        r.oneOf("connector", d.connector(), List.of("nixl")),
        r.oneOf("dialect", d.dialect(), List.of("vllm")),
        r.anyString("engine_api_key_env", d.engineApiKeyEnv()));
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

  public long poolTimeoutMs() {
    return Seconds.toMillis(poolTimeoutS);
  }

  public long healthTimeoutMs() {
    return Seconds.toMillis(healthTimeoutS);
  }

  public long kvLeaseMs() {
    return Seconds.toMillis(kvLeaseS);
  }

  /**
   * The engines' API key: the value of the environment variable {@code engine_api_key_env} names, read through
   * {@code env}; empty when no variable is named or it is unset (requests then carry no key).
   */
  public String engineApiKey(UnaryOperator<String> env) {
    if (engineApiKeyEnv.isEmpty()) return "";
    String value = env.apply(engineApiKeyEnv);
    return value == null ? "" : value.trim();
  }

  public JsonObject toJson() {
    return new JsonObject()
        .put("first_token_timeout_s", Seconds.toJson(firstTokenTimeoutS))
        .put("decode_read_timeout_s", Seconds.toJson(decodeReadTimeoutS))
        .put("connect_timeout_s", Seconds.toJson(connectTimeoutS))
        .put("pool_timeout_s", Seconds.toJson(poolTimeoutS))
        .put("health_timeout_s", Seconds.toJson(healthTimeoutS))
        .put("kv_lease_s", Seconds.toJson(kvLeaseS))
        .put("connector", connector)
        .put("dialect", dialect)
        .put("engine_api_key_env", engineApiKeyEnv);
  }
}
