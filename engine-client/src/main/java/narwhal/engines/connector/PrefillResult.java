package narwhal.engines.connector;

import io.vertx.core.json.JsonObject;

import java.time.Instant;
import java.util.Objects;

/**
 * The outcome of a prefill leg: the backend-owned KV handoff descriptor together with the producer URL,
 * the endpoint it served, the backend request id and the instant the producer HTTP leg started (handoff
 * age counts from there). Pass it unchanged to {@code EngineClient.decode}; the descriptor is immutable
 * from outside, {@link #parameters()} hands out detached copies.
 */
public final class PrefillResult {
  private final JsonObject descriptor;
  private final String producerUrl;
  private final String endpoint;
  private final String backendRequestId;
  private final Instant legStarted;
  private final long legStartedNanos;
  private final long legCompletedNanos;
  private final io.vertx.core.json.JsonArray promptLogprobs;
  private final Integer cachedTokens;

  public PrefillResult(JsonObject descriptor, String producerUrl, String endpoint, String backendRequestId,
                       Instant legStarted, long legStartedNanos, long legCompletedNanos) {
    this(descriptor, producerUrl, endpoint, backendRequestId, legStarted, legStartedNanos, legCompletedNanos, null);
  }

  /** @param promptLogprobs the producer's {@code prompt_logprobs} of the prompt, when the client asked for them */
  public PrefillResult(JsonObject descriptor, String producerUrl, String endpoint, String backendRequestId,
                       Instant legStarted, long legStartedNanos, long legCompletedNanos,
                       io.vertx.core.json.JsonArray promptLogprobs) {
    this(descriptor, producerUrl, endpoint, backendRequestId, legStarted, legStartedNanos, legCompletedNanos, promptLogprobs, null);
  }

  /**
   * @param cachedTokens the prompt tokens the producer's prefix cache served ({@code usage.prompt_tokens_details
   *                     .cached_tokens} of its answer), null when it reported none
   */
  public PrefillResult(JsonObject descriptor, String producerUrl, String endpoint, String backendRequestId,
                       Instant legStarted, long legStartedNanos, long legCompletedNanos,
                       io.vertx.core.json.JsonArray promptLogprobs, Integer cachedTokens) {
    this.promptLogprobs = promptLogprobs;
    this.cachedTokens = cachedTokens;
    this.descriptor = descriptor == null ? null : descriptor.copy();
    this.producerUrl = Objects.requireNonNull(producerUrl, "producerUrl");
    this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
    this.backendRequestId = Objects.requireNonNull(backendRequestId, "backendRequestId");
    this.legStarted = Objects.requireNonNull(legStarted, "legStarted");
    this.legStartedNanos = legStartedNanos;
    this.legCompletedNanos = legCompletedNanos;
  }

  /** A detached deep copy of the handoff descriptor ({@code kv_transfer_params}); null when the producer sent none. */
  public JsonObject parameters() {
    return descriptor == null ? null : descriptor.copy();
  }

  /**
   * The producer's {@code prompt_logprobs} (a completion choice's, or chat's top-level field): the prefill computes the
   * prompt, so only its answer has them; null when the client did not ask or the producer sent none.
   */
  public io.vertx.core.json.JsonArray promptLogprobs() {
    return promptLogprobs;
  }

  /**
   * The prompt tokens the producer's prefix cache served, from its answer's usage: what a prefix placement saved (a
   * decode's usage counts every transferred token as cached). Null when the producer reported none: vLLM reports it
   * with {@code --enable-prompt-tokens-details} only, and leaves it out when nothing was cached.
   */
  public Integer cachedTokens() {
    return cachedTokens;
  }

  /** The engine id the producer put in the descriptor, or null. */
  public String producerEngineId() {
    return descriptor != null && descriptor.getValue("remote_engine_id") instanceof String s ? s : null;
  }

  public String producerUrl() {
    return producerUrl;
  }

  /** The API path the producer served, e.g. {@code /v1/chat/completions}. */
  public String endpoint() {
    return endpoint;
  }

  /** The {@code x-request-id} the prefill leg carried. */
  public String backendRequestId() {
    return backendRequestId;
  }

  /** Wall-clock instant the producer HTTP leg started. */
  public Instant legStarted() {
    return legStarted;
  }

  /** {@link System#nanoTime()} when the producer HTTP leg started: handoff age is measured from it. */
  public long legStartedNanos() {
    return legStartedNanos;
  }

  /** {@link System#nanoTime()} when the producer HTTP leg completed. */
  public long legCompletedNanos() {
    return legCompletedNanos;
  }

  @Override
  public String toString() {
    return "PrefillResult[" + endpoint + ", " + backendRequestId + "]";
  }
}
