package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.List;

/**
 * How placement chooses engines (docs/operations.md#placement). {@code policy}: {@code cache_aware} (prefill by
 * the prompt's leading blocks with bounded load, decode by load), {@code load} (both by load), {@code least_reserved}
 * (both by this replica's reservations, as before). Engine load is read from each engine's {@code /metrics} every
 * {@code metrics_interval_s}, once per interval for the whole cluster, each reading bounded by {@code metrics_timeout_s}.
 * The prefix is {@code prefix_blocks} blocks of {@code prefix_block_chars} characters of what the client sent; a request
 * with {@code session_header} is placed by that instead. A producer keeps a prefix while its load is at most
 * {@code load_factor} times the mean (plus one). Every {@code models_refresh_s} each engine's {@code /v1/models} is read
 * again (the names and LoRA adapters it serves). A prompt of at most {@code local_prefill_max_tokens} tokens (0: off) runs
 * whole on one {@code both} engine, with no remote prefill. An idle engine is read less often, down to once per
 * {@code idle_metrics_interval_s} ({@link #readingIntervalMs}). Every key hot-reloads.
 */
public record PlacementConfig(String policy, double metricsIntervalS, double metricsTimeoutS, String sessionHeader,
                              int prefixBlockChars, int prefixBlocks, double loadFactor, double modelsRefreshS,
                              int localPrefillMaxTokens, double idleMetricsIntervalS) {
  public static final String CACHE_AWARE = "cache_aware";
  public static final String LOAD = "load";
  public static final String LEAST_RESERVED = "least_reserved";
  public static final double DEFAULT_METRICS_INTERVAL_S = 1.0;
  public static final double DEFAULT_METRICS_TIMEOUT_S = 0.5;
  public static final String DEFAULT_SESSION_HEADER = "x-session-id";
  /** About 64 tokens of prompt text per block. */
  public static final int DEFAULT_PREFIX_BLOCK_CHARS = 256;
  public static final int DEFAULT_PREFIX_BLOCKS = 8;
  public static final double DEFAULT_LOAD_FACTOR = 1.25;
  public static final double DEFAULT_MODELS_REFRESH_S = 30;
  /** An idle engine's readings slow down to one per this many seconds (0: every engine every interval). */
  public static final double DEFAULT_IDLE_METRICS_INTERVAL_S = 8;

  static final Key<PlacementConfig, String> POLICY = Key.oneOf("policy", PlacementConfig::policy, CACHE_AWARE,
      List.of(CACHE_AWARE, LOAD, LEAST_RESERVED));
  static final Key<PlacementConfig, Double> METRICS_INTERVAL_S = Key.number("metrics_interval_s",
      PlacementConfig::metricsIntervalS, DEFAULT_METRICS_INTERVAL_S, v -> v >= 0.05 && v <= 3600,
      "a number from 0.05 to 3600");
  static final Key<PlacementConfig, Double> METRICS_TIMEOUT_S = Key.number("metrics_timeout_s",
      PlacementConfig::metricsTimeoutS, DEFAULT_METRICS_TIMEOUT_S, v -> v >= 0.01 && v <= 60, "a number from 0.01 to 60");
  /** Headers every request carries alike, or that frame it: as a session they pin unrelated requests together. */
  private static final List<String> NOT_A_SESSION = List.of("content-length", "content-type", "transfer-encoding", "host",
      "connection", "accept", "user-agent");
  static final Key<PlacementConfig, String> SESSION_HEADER = Key.text("session_header",
      PlacementConfig::sessionHeader, DEFAULT_SESSION_HEADER, PlacementConfig::sessionHeaderName,
      "\"\" (off) or an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) other than " + String.join(", ", NOT_A_SESSION));
  static final Key<PlacementConfig, Integer> PREFIX_BLOCK_CHARS = Key.integer("prefix_block_chars",
      PlacementConfig::prefixBlockChars, DEFAULT_PREFIX_BLOCK_CHARS, 16, 65_536);
  static final Key<PlacementConfig, Integer> PREFIX_BLOCKS = Key.integer("prefix_blocks", PlacementConfig::prefixBlocks,
      DEFAULT_PREFIX_BLOCKS, 1, 1_024);
  static final Key<PlacementConfig, Double> LOAD_FACTOR = Key.number("load_factor", PlacementConfig::loadFactor,
      DEFAULT_LOAD_FACTOR, v -> v >= 1 && v <= 100, "a number from 1 to 100");
  static final Key<PlacementConfig, Double> MODELS_REFRESH_S = Key.number("models_refresh_s",
      PlacementConfig::modelsRefreshS, DEFAULT_MODELS_REFRESH_S, v -> v >= 0.05 && v <= 86_400,
      "a number of seconds from 0.05 to 86400");
  static final Key<PlacementConfig, Integer> LOCAL_PREFILL_MAX_TOKENS = Key.integer("local_prefill_max_tokens",
      PlacementConfig::localPrefillMaxTokens, 0, 0, 1_048_576);
  static final Key<PlacementConfig, Double> IDLE_METRICS_INTERVAL_S = Key.number("idle_metrics_interval_s",
      PlacementConfig::idleMetricsIntervalS, DEFAULT_IDLE_METRICS_INTERVAL_S, v -> v == 0 || v >= 0.05 && v <= 3600,
      "0 (off) or a number from 0.05 to 3600");
  static final Section<PlacementConfig> SECTION = new Section<>(POLICY, METRICS_INTERVAL_S, METRICS_TIMEOUT_S,
      SESSION_HEADER, PREFIX_BLOCK_CHARS, PREFIX_BLOCKS, LOAD_FACTOR, MODELS_REFRESH_S, LOCAL_PREFILL_MAX_TOKENS,
      IDLE_METRICS_INTERVAL_S);

  /** As before {@code models_refresh_s}: its default. */
  public PlacementConfig(String policy, double metricsIntervalS, double metricsTimeoutS, String sessionHeader,
                         int prefixBlockChars, int prefixBlocks, double loadFactor) {
    this(policy, metricsIntervalS, metricsTimeoutS, sessionHeader, prefixBlockChars, prefixBlocks, loadFactor,
        DEFAULT_MODELS_REFRESH_S);
  }

  /** As before {@code local_prefill_max_tokens}: off. */
  public PlacementConfig(String policy, double metricsIntervalS, double metricsTimeoutS, String sessionHeader,
                         int prefixBlockChars, int prefixBlocks, double loadFactor, double modelsRefreshS) {
    this(policy, metricsIntervalS, metricsTimeoutS, sessionHeader, prefixBlockChars, prefixBlocks, loadFactor,
        modelsRefreshS, 0);
  }

  /** As before {@code idle_metrics_interval_s}: its default. */
  public PlacementConfig(String policy, double metricsIntervalS, double metricsTimeoutS, String sessionHeader,
                         int prefixBlockChars, int prefixBlocks, double loadFactor, double modelsRefreshS,
                         int localPrefillMaxTokens) {
    this(policy, metricsIntervalS, metricsTimeoutS, sessionHeader, prefixBlockChars, prefixBlocks, loadFactor,
        modelsRefreshS, localPrefillMaxTokens, DEFAULT_IDLE_METRICS_INTERVAL_S);
  }

  public static PlacementConfig defaults() {
    return read(SectionReader.empty("placement", SECTION));
  }

  static PlacementConfig read(SectionReader r) {
    return new PlacementConfig(r.get(POLICY), r.get(METRICS_INTERVAL_S), r.get(METRICS_TIMEOUT_S), r.get(SESSION_HEADER),
        r.get(PREFIX_BLOCK_CHARS), r.get(PREFIX_BLOCKS), r.get(LOAD_FACTOR), r.get(MODELS_REFRESH_S),
        r.get(LOCAL_PREFILL_MAX_TOKENS), r.get(IDLE_METRICS_INTERVAL_S));
  }

  public long modelsRefreshMs() {
    return Math.max(1, Math.round(modelsRefreshS * 1000));
  }

  /** These settings under another policy. */
  public PlacementConfig withPolicy(String other) {
    return new PlacementConfig(other, metricsIntervalS, metricsTimeoutS, sessionHeader, prefixBlockChars, prefixBlocks, loadFactor,
        modelsRefreshS, localPrefillMaxTokens, idleMetricsIntervalS);
  }

  public long metricsIntervalMs() {
    return Math.max(1, Math.round(metricsIntervalS * 1000));
  }

  /**
   * How old a reading may get before the engine is read again: the interval, doubled for each reading in a row that
   * found the engine idle (nothing running or waiting, no leg placed since the reading before), up to
   * {@code idle_metrics_interval_s}; never less than the interval.
   */
  public long readingIntervalMs(int idleReadings) {
    long interval = metricsIntervalMs();
    long slowest = Math.max(interval, Math.round(idleMetricsIntervalS * 1000));
    if (idleMetricsIntervalS == 0 || idleReadings <= 0) return interval;
    return Math.min(slowest, interval << Math.min(idleReadings, 20));
  }

  public long metricsTimeoutMs() {
    return Math.max(1, Math.round(metricsTimeoutS * 1000));
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }

  /** {@code ""}, or a header name (RFC 9110 token) a client can send per conversation. */
  private static boolean sessionHeaderName(String name) {
    if (name.isEmpty()) return true;
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      boolean tchar = c < 128 && (Character.isLetterOrDigit(c) || "!#$%&'*+-.^_`|~".indexOf(c) >= 0);
      if (!tchar) return false;
    }
    return !NOT_A_SESSION.contains(name.toLowerCase(java.util.Locale.ROOT));
  }
}
