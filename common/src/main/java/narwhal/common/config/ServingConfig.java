package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Limits and retry policy for client requests: connection and body caps, the whole-request and
 * prefill-leg deadlines, retry attempts with capped exponential backoff drawn from a replenishing
 * retry budget, and the stop sequence: how long a stopping replica keeps serving after its readiness turned false
 * (so the load balancer takes it out first), then how long it waits for in-flight requests.
 */
public record ServingConfig(
    int maxConnections,
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
    double drainDelayS) {

  static final Set<String> KEYS = Set.of("max_connections", "max_request_bytes", "max_response_bytes",
      "request_timeout_s", "prefill_timeout_s", "max_attempts", "retry_base_s", "retry_cap_s",
      "retry_budget", "retry_replenish", "graceful_timeout_s", "receive_timeout_s", "drain_delay_s");

  /**
   * {@code receive_timeout_s} (ours; default 10): how long a client may take to send a request's
   * headers and body; a slower sender gets 408 (or, still in its headers, a closed connection).
   * {@code drain_delay_s} (default 5, 0 = refuse at once): after SIGTERM, {@code /ready} answers 503 at once but new
   * requests are still served this long; then they are refused with 503 {@code shutting_down}.
   */
  public static ServingConfig defaults() {
    return new ServingConfig(768, 4_194_304, 16_777_216, 600, 120, 1, 0.1, 1.0, 10, 0.1, 30, 10, 5);
  }

  static ServingConfig read(SectionReader r) {
    ServingConfig d = defaults();
    int maxConnections = r.integer("max_connections", d.maxConnections(), 1, Integer.MAX_VALUE);
    long maxRequestBytes = r.wholeNumber("max_request_bytes", d.maxRequestBytes(), 1024, Long.MAX_VALUE,
        "an integer of at least 1024");
    long maxResponseBytes = r.wholeNumber("max_response_bytes", d.maxResponseBytes(), 1024,
        Long.MAX_VALUE, "an integer of at least 1024");
    double requestTimeoutS = r.positive("request_timeout_s", d.requestTimeoutS());
    double prefillTimeoutS = r.positive("prefill_timeout_s", d.prefillTimeoutS());
    int maxAttempts = r.integer("max_attempts", d.maxAttempts(), 1, 3);
    double retryBaseS = r.positive("retry_base_s", d.retryBaseS());
    double retryCapS = r.number("retry_cap_s", Math.max(d.retryCapS(), retryBaseS), v -> v >= retryBaseS,
        "a number of at least serving.retry_base_s (" + Seconds.toJson(retryBaseS) + ")");
    int retryBudget = r.integer("retry_budget", d.retryBudget(), 0, Integer.MAX_VALUE);
    double retryReplenish = r.number("retry_replenish", d.retryReplenish(), v -> v >= 0 && v <= 1,
        "a number from 0 to 1");
    double gracefulTimeoutS = r.nonNegative("graceful_timeout_s", d.gracefulTimeoutS());
    double receiveTimeoutS = r.positive("receive_timeout_s", d.receiveTimeoutS());
    double drainDelayS = r.nonNegative("drain_delay_s", d.drainDelayS());
    return new ServingConfig(maxConnections, maxRequestBytes, maxResponseBytes, requestTimeoutS,
        prefillTimeoutS, maxAttempts, retryBaseS, retryCapS, retryBudget, retryReplenish,
        gracefulTimeoutS, receiveTimeoutS, drainDelayS);
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
    return new JsonObject()
        .put("max_connections", maxConnections)
        .put("max_request_bytes", maxRequestBytes)
        .put("max_response_bytes", maxResponseBytes)
        .put("request_timeout_s", Seconds.toJson(requestTimeoutS))
        .put("prefill_timeout_s", Seconds.toJson(prefillTimeoutS))
        .put("max_attempts", maxAttempts)
        .put("retry_base_s", Seconds.toJson(retryBaseS))
        .put("retry_cap_s", Seconds.toJson(retryCapS))
        .put("retry_budget", retryBudget)
        .put("retry_replenish", retryReplenish)
        .put("graceful_timeout_s", Seconds.toJson(gracefulTimeoutS))
        .put("receive_timeout_s", Seconds.toJson(receiveTimeoutS))
        .put("drain_delay_s", Seconds.toJson(drainDelayS));
  }
}
