package narwhal.engines.client;

import java.util.function.Supplier;

/**
 * Transport settings of an {@link EngineClient}: connect timeout, connections per engine, the largest
 * non-streamed response body and stream event it accepts, and the bearer token engines want (empty: none), asked for
 * at each request so a rotated key applies to the next one.
 */
public record EngineClientOptions(long connectTimeoutMs, int maxConnectionsPerEngine, long maxResponseBytes,
                                  int maxEventBytes, Supplier<String> apiKey) {

  public static final long DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
  public static final int DEFAULT_MAX_CONNECTIONS_PER_ENGINE = 768;
  public static final long DEFAULT_MAX_RESPONSE_BYTES = 16L * 1024 * 1024;
  public static final int DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

  public EngineClientOptions {
    if (connectTimeoutMs <= 0) throw new IllegalArgumentException("connectTimeoutMs: " + connectTimeoutMs + " is not valid: expected > 0");
    if (maxConnectionsPerEngine < 1) throw new IllegalArgumentException("maxConnectionsPerEngine: " + maxConnectionsPerEngine + " is not valid: expected >= 1");
    if (maxResponseBytes < 1) throw new IllegalArgumentException("maxResponseBytes: " + maxResponseBytes + " is not valid: expected >= 1");
    if (maxEventBytes < 1) throw new IllegalArgumentException("maxEventBytes: " + maxEventBytes + " is not valid: expected >= 1");
    apiKey = apiKey == null ? () -> "" : apiKey;
  }

  public static EngineClientOptions defaults() {
    return new EngineClientOptions(DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS_PER_ENGINE,
        DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_EVENT_BYTES, () -> "");
  }
}
