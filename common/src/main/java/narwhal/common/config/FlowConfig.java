package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.Objects;

/**
 * How a saturated replica holds requests ({@code flow}, docs/operations.md#sharing-a-fleet): once
 * {@code serving.max_legs_in_flight} attempts run legs, the next ones wait at the router, dispatched by priority class
 * and fairly across tenants, each at most {@code queue_timeout_s} (then 429 {@code queue_timeout}); at most
 * {@code max_queued} wait (the most-queued tenant's newest is refused first). {@code tenant_header} names the tenant of
 * a request whose key names none (unkeyed deployments behind a gateway that sets it).
 */
public record FlowConfig(double queueTimeoutS, int maxQueued, String tenantHeader) {
  public static final double DEFAULT_QUEUE_TIMEOUT_S = 30;
  public static final int DEFAULT_MAX_QUEUED = 4096;

  static final Key<FlowConfig, Double> QUEUE_TIMEOUT_S =
      Key.positiveSeconds("queue_timeout_s", FlowConfig::queueTimeoutS, DEFAULT_QUEUE_TIMEOUT_S);
  static final Key<FlowConfig, Integer> MAX_QUEUED =
      Key.integer("max_queued", FlowConfig::maxQueued, DEFAULT_MAX_QUEUED, 1, 1_000_000);
  static final Key<FlowConfig, String> TENANT_HEADER = Key.text("tenant_header", FlowConfig::tenantHeader, "",
      h -> h.isEmpty() || h.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}"), "\"\" or an HTTP header name (1-64 characters)");
  static final Section<FlowConfig> SECTION = new Section<>(QUEUE_TIMEOUT_S, MAX_QUEUED, TENANT_HEADER);

  public FlowConfig {
    Objects.requireNonNull(tenantHeader, "tenantHeader");
  }

  public static FlowConfig defaults() {
    return read(SectionReader.empty("flow", SECTION));
  }

  static FlowConfig read(SectionReader r) {
    return new FlowConfig(r.get(QUEUE_TIMEOUT_S), r.get(MAX_QUEUED), r.get(TENANT_HEADER));
  }

  public long queueTimeoutMs() {
    return Seconds.toMillis(queueTimeoutS);
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
