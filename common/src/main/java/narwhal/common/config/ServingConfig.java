package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/**
 * Limits and retry policy for client requests: the in-flight request limit and body caps, the whole-request and
 * prefill-leg deadlines, retry attempts with capped exponential backoff drawn from a replenishing
 * retry budget, and the stop sequence: how long a stopping replica keeps serving after its readiness turned false
 * (so the load balancer takes it out first), then how long it waits for in-flight requests.
 */
public record ServingConfig(
    int maxInFlight,
    long maxRequestBytes,
    long maxResponseBytes,
    double requestTimeoutS,
    double prefillTimeoutS,
    int maxAttempts,
    double retryBaseS,
    double retryCapS,
    int retryBudget,
    double retryReplenish,
    double gracefulTimeoutS,
    double receiveTimeoutS,
    double drainDelayS,
    int batchParallelism,
    int maxBatchPrompts,
    int maxLegsInFlight) {

  public static final int DEFAULT_MAX_IN_FLIGHT = 768;
  public static final long DEFAULT_MAX_REQUEST_BYTES = 4L * 1024 * 1024;
  public static final long DEFAULT_MAX_RESPONSE_BYTES = 16L * 1024 * 1024;
  public static final double DEFAULT_REQUEST_TIMEOUT_S = 600;
  public static final double DEFAULT_PREFILL_TIMEOUT_S = 120;
  /** One attempt: no retry unless the operator asks for it. */
  public static final int DEFAULT_MAX_ATTEMPTS = 1;
  public static final double DEFAULT_RETRY_BASE_S = 0.1;
  public static final double DEFAULT_RETRY_CAP_S = 1.0;
  public static final int DEFAULT_RETRY_BUDGET = 10;
  public static final double DEFAULT_RETRY_REPLENISH = 0.1;
  public static final double DEFAULT_GRACEFUL_TIMEOUT_S = 30;
  public static final double DEFAULT_RECEIVE_TIMEOUT_S = 10;
  public static final double DEFAULT_DRAIN_DELAY_S = 5;
  public static final int DEFAULT_BATCH_PARALLELISM = 16;
  /** OpenAI's legacy completions take at most 2048 prompts in one request's array; vLLM sets no bound of its own. */
  public static final int DEFAULT_MAX_BATCH_PROMPTS = 2048;
  /**
   * When the file does not set it, {@code serving.max_in_flight}'s value ({@link #read}): a replica runs no more legs at
   * once than it admits requests; this is that value's default.
   */
  public static final int DEFAULT_MAX_LEGS_IN_FLIGHT = DEFAULT_MAX_IN_FLIGHT;

  static final Key<ServingConfig, Integer> MAX_IN_FLIGHT =
      Key.integer("max_in_flight", ServingConfig::maxInFlight, DEFAULT_MAX_IN_FLIGHT, 1, Integer.MAX_VALUE);
  /** Before 0.1 one key set both the in-flight limit and the connections per engine. */
  static final Key<ServingConfig, Integer> MAX_CONNECTIONS =
      Key.integer("max_connections", ServingConfig::maxInFlight, DEFAULT_MAX_IN_FLIGHT, 1, Integer.MAX_VALUE)
          .replacedBy("set serving.max_in_flight (the in-flight request limit) and engine.max_connections_per_engine "
              + "(the connection pool to each engine); until then its value sets both");
  static final Key<ServingConfig, Long> MAX_REQUEST_BYTES = Key.whole("max_request_bytes",
      ServingConfig::maxRequestBytes, DEFAULT_MAX_REQUEST_BYTES, 1024, Long.MAX_VALUE, "an integer of at least 1024");
  static final Key<ServingConfig, Long> MAX_RESPONSE_BYTES = Key.whole("max_response_bytes",
      ServingConfig::maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, 1024, Long.MAX_VALUE, "an integer of at least 1024");
  static final Key<ServingConfig, Double> REQUEST_TIMEOUT_S =
      Key.positiveSeconds("request_timeout_s", ServingConfig::requestTimeoutS, DEFAULT_REQUEST_TIMEOUT_S);
  static final Key<ServingConfig, Double> PREFILL_TIMEOUT_S =
      Key.positiveSeconds("prefill_timeout_s", ServingConfig::prefillTimeoutS, DEFAULT_PREFILL_TIMEOUT_S);
  static final Key<ServingConfig, Integer> MAX_ATTEMPTS =
      Key.integer("max_attempts", ServingConfig::maxAttempts, DEFAULT_MAX_ATTEMPTS, 1, 3);
  static final Key<ServingConfig, Double> RETRY_BASE_S =
      Key.positiveSeconds("retry_base_s", ServingConfig::retryBaseS, DEFAULT_RETRY_BASE_S);
  /** At least {@code retry_base_s}: checked in {@link #read}, which knows that value. */
  static final Key<ServingConfig, Double> RETRY_CAP_S =
      Key.positiveSeconds("retry_cap_s", ServingConfig::retryCapS, DEFAULT_RETRY_CAP_S);
  static final Key<ServingConfig, Integer> RETRY_BUDGET =
      Key.integer("retry_budget", ServingConfig::retryBudget, DEFAULT_RETRY_BUDGET, 0, Integer.MAX_VALUE);
  static final Key<ServingConfig, Double> RETRY_REPLENISH = Key.number("retry_replenish",
      ServingConfig::retryReplenish, DEFAULT_RETRY_REPLENISH, v -> v >= 0 && v <= 1, "a number from 0 to 1");
  static final Key<ServingConfig, Double> GRACEFUL_TIMEOUT_S =
      Key.nonNegativeSeconds("graceful_timeout_s", ServingConfig::gracefulTimeoutS, DEFAULT_GRACEFUL_TIMEOUT_S);
  /** How long a client may take to send a request's headers and body; slower gets 408 or a closed connection. */
  static final Key<ServingConfig, Double> RECEIVE_TIMEOUT_S =
      Key.positiveSeconds("receive_timeout_s", ServingConfig::receiveTimeoutS, DEFAULT_RECEIVE_TIMEOUT_S);
  /** After SIGTERM, how long new requests are still served while {@code /ready} answers 503 (0 = refuse at once). */
  static final Key<ServingConfig, Double> DRAIN_DELAY_S =
      Key.nonNegativeSeconds("drain_delay_s", ServingConfig::drainDelayS, DEFAULT_DRAIN_DELAY_S);

  /** How many prompts of one batched completions request run their legs at once (the others wait their turn). */
  static final Key<ServingConfig, Integer> BATCH_PARALLELISM =
      Key.integer("batch_parallelism", ServingConfig::batchParallelism, DEFAULT_BATCH_PARALLELISM, 1, 1_024);

  /** The most prompts one completions request may batch in its {@code prompt} list; more get a 400 naming this key. */
  static final Key<ServingConfig, Integer> MAX_BATCH_PROMPTS =
      Key.integer("max_batch_prompts", ServingConfig::maxBatchPrompts, DEFAULT_MAX_BATCH_PROMPTS, 1, 1_000_000);
  /**
   * How many attempts this replica runs against engines at once, across all requests and batches: one more waits
   * for a turn before its prefill (or its one leg) is sent.
   */
  static final Key<ServingConfig, Integer> MAX_LEGS_IN_FLIGHT =
      Key.integer("max_legs_in_flight", ServingConfig::maxLegsInFlight, DEFAULT_MAX_LEGS_IN_FLIGHT, 1, Integer.MAX_VALUE);

  static final Section<ServingConfig> SECTION = new Section<>(MAX_IN_FLIGHT, MAX_CONNECTIONS, MAX_REQUEST_BYTES,
      MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, PREFILL_TIMEOUT_S, MAX_ATTEMPTS, RETRY_BASE_S, RETRY_CAP_S, RETRY_BUDGET,
      RETRY_REPLENISH, GRACEFUL_TIMEOUT_S, RECEIVE_TIMEOUT_S, DRAIN_DELAY_S, BATCH_PARALLELISM, MAX_BATCH_PROMPTS,
      MAX_LEGS_IN_FLIGHT);

  public static ServingConfig defaults() {
    return read(SectionReader.empty("serving", SECTION), null);
  }

  /** {@code serving.max_connections} when an older file still sets it, else null. */
  static Integer legacyMaxConnections(SectionReader r) {
    return r.has(MAX_CONNECTIONS.name()) ? r.get(MAX_CONNECTIONS) : null;
  }

  /** {@code legacyMaxConnections}: {@link #legacyMaxConnections}, the in-flight limit unless the file sets it. */
  static ServingConfig read(SectionReader r, Integer legacy) {
    int maxInFlight = legacy != null && !r.has(MAX_IN_FLIGHT.name()) ? legacy : r.get(MAX_IN_FLIGHT);
    long maxRequestBytes = r.get(MAX_REQUEST_BYTES);
    long maxResponseBytes = r.get(MAX_RESPONSE_BYTES);
    double requestTimeoutS = r.get(REQUEST_TIMEOUT_S);
    double prefillTimeoutS = r.get(PREFILL_TIMEOUT_S);
    int maxAttempts = r.get(MAX_ATTEMPTS);
    double retryBaseS = r.get(RETRY_BASE_S);
    double retryCapS = r.number(RETRY_CAP_S.name(), Math.max(RETRY_CAP_S.defaultValue(), retryBaseS),
        v -> v >= retryBaseS, "a number of at least serving.retry_base_s (" + Seconds.toJson(retryBaseS) + ")");
    return new ServingConfig(maxInFlight, maxRequestBytes, maxResponseBytes, requestTimeoutS, prefillTimeoutS,
        maxAttempts, retryBaseS, retryCapS, r.get(RETRY_BUDGET), r.get(RETRY_REPLENISH), r.get(GRACEFUL_TIMEOUT_S),
        r.get(RECEIVE_TIMEOUT_S), r.get(DRAIN_DELAY_S), r.get(BATCH_PARALLELISM), r.get(MAX_BATCH_PROMPTS),
        r.has(MAX_LEGS_IN_FLIGHT.name()) ? r.get(MAX_LEGS_IN_FLIGHT) : maxInFlight);
  }

  public long requestTimeoutMs() {
    return Seconds.toMillis(requestTimeoutS);
  }

  public long prefillTimeoutMs() {
    return Seconds.toMillis(prefillTimeoutS);
  }

  public long retryBaseMs() {
    return Seconds.toMillis(retryBaseS);
  }

  public long retryCapMs() {
    return Seconds.toMillis(retryCapS);
  }

  public long receiveTimeoutMs() {
    return Seconds.toMillis(receiveTimeoutS);
  }

  public long gracefulTimeoutMs() {
    return Seconds.toMillis(gracefulTimeoutS);
  }

  public long drainDelayMs() {
    return Seconds.toMillis(drainDelayS);
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
