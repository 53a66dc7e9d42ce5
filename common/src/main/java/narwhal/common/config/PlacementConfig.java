package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Set;

/**
 * Ours: how placement chooses engines (docs/operations.md#placement). {@code policy}: {@code cache_aware} (prefill by
 * the prompt's leading blocks with bounded load, decode by load), {@code load} (both by load), {@code least_reserved}
 * (both by this replica's reservations, as before). Engine load is read from each engine's {@code /metrics} every
 * {@code metrics_interval_s}, once per interval for the whole cluster, each reading bounded by {@code metrics_timeout_s}.
 * The prefix is {@code prefix_blocks} blocks of {@code prefix_block_chars} characters of what the client sent; a request
 * with {@code session_header} is placed by that instead. A producer keeps a prefix while its load is at most
 * {@code load_factor} times the mean (plus one). Every {@code models_refresh_s} each engine's {@code /v1/models} is read
 * again (the names and LoRA adapters it serves). Every key hot-reloads.
 */
public record PlacementConfig(String policy, double metricsIntervalS, double metricsTimeoutS, String sessionHeader,
                              int prefixBlockChars, int prefixBlocks, double loadFactor, double modelsRefreshS) {
  public static final String CACHE_AWARE = "cache_aware";
  public static final String LOAD = "load";
  public static final String LEAST_RESERVED = "least_reserved";
  static final Set<String> KEYS = Set.of("policy", "metrics_interval_s", "metrics_timeout_s", "session_header",
      "prefix_block_chars", "prefix_blocks", "load_factor", "models_refresh_s");

  /** As before {@code models_refresh_s}: its default. */
  public PlacementConfig(String policy, double metricsIntervalS, double metricsTimeoutS, String sessionHeader,
                         int prefixBlockChars, int prefixBlocks, double loadFactor) {
    this(policy, metricsIntervalS, metricsTimeoutS, sessionHeader, prefixBlockChars, prefixBlocks, loadFactor, 30);
  }

  public static PlacementConfig defaults() {
    return new PlacementConfig(CACHE_AWARE, 1.0, 0.5, "x-session-id", 256, 8, 1.25);
  }

  static PlacementConfig read(SectionReader r) {
    PlacementConfig d = defaults();
    return new PlacementConfig(
        r.oneOf("policy", d.policy(), List.of(CACHE_AWARE, LOAD, LEAST_RESERVED)),
        r.number("metrics_interval_s", d.metricsIntervalS(), v -> v >= 0.05 && v <= 3600, "a number from 0.05 to 3600"),
        r.number("metrics_timeout_s", d.metricsTimeoutS(), v -> v >= 0.01 && v <= 60, "a number from 0.01 to 60"),
        r.anyString("session_header", d.sessionHeader()),
        r.integer("prefix_block_chars", d.prefixBlockChars(), 16, 65_536),
        r.integer("prefix_blocks", d.prefixBlocks(), 1, 1_024),
        r.number("load_factor", d.loadFactor(), v -> v >= 1 && v <= 100, "a number from 1 to 100"),
        r.number("models_refresh_s", d.modelsRefreshS(), v -> v >= 0.05 && v <= 86_400, "a number of seconds from 0.05 to 86400"));
  }

  public long modelsRefreshMs() {
    return Math.max(1, Math.round(modelsRefreshS * 1000));
  }

  /** These settings under another policy. */
  public PlacementConfig withPolicy(String other) {
    return new PlacementConfig(other, metricsIntervalS, metricsTimeoutS, sessionHeader, prefixBlockChars, prefixBlocks, loadFactor);
  }

  public long metricsIntervalMs() {
    return Math.max(1, Math.round(metricsIntervalS * 1000));
  }

  public long metricsTimeoutMs() {
    return Math.max(1, Math.round(metricsTimeoutS * 1000));
  }

  public JsonObject toJson() {
    return new JsonObject().put("policy", policy).put("metrics_interval_s", metricsIntervalS)
        .put("metrics_timeout_s", metricsTimeoutS).put("session_header", sessionHeader)
        .put("prefix_block_chars", prefixBlockChars).put("prefix_blocks", prefixBlocks).put("load_factor", loadFactor)
        .put("models_refresh_s", modelsRefreshS);
  }
}
