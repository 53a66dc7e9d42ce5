package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.Objects;

/**
 * How a saturated replica holds requests ({@code flow}, docs/operations.md#sharing-a-fleet): once
 * {@code serving.max_legs_in_flight} attempts run legs, the next ones wait at the router, dispatched by priority class
 * and fairly across tenants, each at most {@code queue_timeout_s} (then 429 {@code queue_timeout}); at most
 * {@code max_queued} wait (the most-queued tenant's newest is refused first). The engines' own queues hold requests
 * too: while every engine of a phase serving a model has {@code engine_queue_max} requests waiting
 * ({@code vllm:num_requests_waiting}) by two readings in a row, an attempt of that model starts only in place of one that ended (0: off).
 * {@code reserved_for_high} of {@code serving.max_legs_in_flight} are left to the {@code high} class.
 * {@code prefill_legs_max} bounds the prefill legs this replica runs at once on one producer (0: off): a producer's
 * queue that vLLM does not report (prompts that fit one step's token budget are all "running") waits at the router.
 * {@code burst}: how many attempts, each of its own cost, a tenant that has used less than its share may start ahead of
 * the tenants of its class with a backlog (a steady tenant's few requests arriving together are not interleaved with a
 * flood's; its share over time is unchanged).
 * {@code tenant_header} names the tenant of
 * a request whose key names none (unkeyed deployments behind a gateway that sets it).
 */
public record FlowConfig(double queueTimeoutS, int maxQueued, int engineQueueMax, int reservedForHigh, int prefillLegsMax,
                         int burst, String tenantHeader) {
  public static final double DEFAULT_QUEUE_TIMEOUT_S = 30;
  public static final int DEFAULT_MAX_QUEUED = 4096;
  /** As llm-d's saturation detector's default queue depth: a few requests queued on every engine is saturation. */
  public static final int DEFAULT_ENGINE_QUEUE_MAX = 5;

  static final Key<FlowConfig, Double> QUEUE_TIMEOUT_S =
      Key.positiveSeconds("queue_timeout_s", FlowConfig::queueTimeoutS, DEFAULT_QUEUE_TIMEOUT_S);
  static final Key<FlowConfig, Integer> MAX_QUEUED =
      Key.integer("max_queued", FlowConfig::maxQueued, DEFAULT_MAX_QUEUED, 1, 1_000_000);
  static final Key<FlowConfig, Integer> ENGINE_QUEUE_MAX =
      Key.integer("engine_queue_max", FlowConfig::engineQueueMax, DEFAULT_ENGINE_QUEUE_MAX, 0, 1_000_000);
  static final Key<FlowConfig, Integer> RESERVED_FOR_HIGH =
      Key.integer("reserved_for_high", FlowConfig::reservedForHigh, 0, 0, 1_000_000);
  static final Key<FlowConfig, Integer> PREFILL_LEGS_MAX =
      Key.integer("prefill_legs_max", FlowConfig::prefillLegsMax, 0, 0, 1_000_000);
  /** A few requests of a Poisson-arriving tenant arrive together now and then: at 10 a second, 5 within 100 ms 0.4 % of the time. */
  public static final int DEFAULT_BURST = 4;
  static final Key<FlowConfig, Integer> BURST = Key.integer("burst", FlowConfig::burst, DEFAULT_BURST, 0, 1_000);
  static final Key<FlowConfig, String> TENANT_HEADER = Key.text("tenant_header", FlowConfig::tenantHeader, "",
      h -> h.isEmpty() || h.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}"), "\"\" or an HTTP header name (1-64 characters)");
  static final Section<FlowConfig> SECTION = new Section<>(QUEUE_TIMEOUT_S, MAX_QUEUED, ENGINE_QUEUE_MAX, RESERVED_FOR_HIGH,
      PREFILL_LEGS_MAX, BURST, TENANT_HEADER);

  public FlowConfig {
    Objects.requireNonNull(tenantHeader, "tenantHeader");
  }

  public static FlowConfig defaults() {
    return read(SectionReader.empty("flow", SECTION));
  }

  static FlowConfig read(SectionReader r) {
    return new FlowConfig(r.get(QUEUE_TIMEOUT_S), r.get(MAX_QUEUED), r.get(ENGINE_QUEUE_MAX), r.get(RESERVED_FOR_HIGH),
        r.get(PREFILL_LEGS_MAX), r.get(BURST), r.get(TENANT_HEADER));
  }

  public long queueTimeoutMs() {
    return Seconds.toMillis(queueTimeoutS);
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
