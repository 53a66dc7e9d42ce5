package narwhal.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import narwhal.common.config.EngineConfig;
import narwhal.common.fault.FaultKind;
import narwhal.common.fault.Phase;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The router's request metrics (docs/metrics.md), named so Prometheus shows {@code narwhal_*}. Label values come
 * from fixed sets (fault reasons, phases, the fleet's iids), never from request data, and every series is
 * registered at zero from start so dashboards and alerts see it before the first event.
 */
final class RouterMetrics {
  private static final List<String> EXPIRY_REASONS = List.of("request_deadline", FaultKind.HANDOFF_EXPIRED.reason());
  /** Refusals before a model is known: their {@code model} label is empty; {@code no_engine} is per model ({@link ModelMetrics}). */
  private static final List<String> REJECTION_REASONS = List.of("quota_requests", "quota_tokens", "quota_concurrent",
      "queue_timeout", "queue_full", "in_flight_limit", "fleet_hold", "shutting_down",
      "invalid_api_key");

  private final MeterRegistry registry;
  private final Counter offered;
  private final Counter served;
  private final Counter cancelled;
  private final Counter invalid;
  private final Counter prefillAttempts;
  private final Counter decodeAttempts;
  private final Counter retryAttempts;
  private final Counter servedAfterRetry;
  private final Counter retryDenied;
  private final Counter handoffsLeft;
  private final Timer ttft;
  private final Timer firstByte;
  private final Counter reloadsApplied;
  private final Counter reloadsRefused;
  private final Counter reloadsRestartPending;
  private final Counter reloadsUnreadable;
  private final AtomicInteger restartPending = new AtomicInteger();
  private final Map<String, Counter> failed = new ConcurrentHashMap<>();
  private final Map<String, Counter> expired = new ConcurrentHashMap<>();
  private final Map<String, Counter> rejected = new ConcurrentHashMap<>();
  /** By phase wire name, then reason. */
  private final Map<String, Map<String, Counter>> attemptFailures = new ConcurrentHashMap<>();
  /** By engine iid, then {@link Phase} ordinal. */
  private final Map<String, AtomicInteger[]> resident = new ConcurrentHashMap<>();
  /** Engines removed by a reload whose series wait for their last leg to end. */
  private final Set<String> retired = ConcurrentHashMap.newKeySet();
  /** Why placement chose an engine (narwhal.common.bus.Reservation#reason), per phase. */
  static final List<String> PLACEMENT_REASONS = List.of("prefix", "new_prefix", "session", "spill", "load", "least_reserved", "only_candidate", "local");
  /** Per phase (ordinal), per reason: looked up per leg without building a key. */
  private final List<Map<String, Counter>> placements = List.of(new ConcurrentHashMap<>(), new ConcurrentHashMap<>());

  public RouterMetrics(MeterRegistry registry, Supplier<Number> retryCredits, List<EngineConfig> engines) {
    this.registry = registry;
    offered = counter("narwhal.offered", "requests offered to the router");
    served = counter("narwhal.served", "requests completed");
    cancelled = counter("narwhal.cancelled", "requests the client abandoned");
    invalid = counter("narwhal.invalid.requests", "requests refused as invalid");
    prefillAttempts = counter("narwhal.prefill.attempts", "prefill legs dispatched");
    decodeAttempts = counter("narwhal.decode.attempts", "decode legs dispatched");
    retryAttempts = counter("narwhal.retry.attempts", "fresh attempts started after a failed one");
    servedAfterRetry = counter("narwhal.served.after.retry", "requests completed by a retry");
    retryDenied = counter("narwhal.retry.denied", "retries refused for want of a retry credit");
    handoffsLeft = counter("narwhal.handoffs.left", "prefill handoffs no decode output followed, left to the producer's KV lease");
    Gauge.builder("narwhal.retry.credits", retryCredits, s -> s.get().doubleValue()).description("retry credits in the pool")
        .register(registry);
    ttft = latency("narwhal.ttft", "arrival to producer HTTP completion");
    firstByte = latency("narwhal.first.byte", "arrival to the first decode output");
    for (FaultKind kind : FaultKind.values()) {
      failedCounter(kind.reason());
      for (Phase phase : Phase.values()) attemptFailures(phase.wireName(), kind.reason());
    }
    failedCounter("no_engine");
    EXPIRY_REASONS.forEach(this::expiredCounter);
    REJECTION_REASONS.forEach(this::rejectedCounter);
    for (String c : narwhal.common.config.TenantConfig.CLASSES) {
      flowWaits.put(c, Timer.builder("narwhal.flow.wait").description("how long attempts waited for a turn in the router's queue, by priority class")
          .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(120))
          .tag("class", c).register(registry));
    }
    for (Phase phase : Phase.values()) PLACEMENT_REASONS.forEach(reason -> placementCounter(phase, reason));
    reloadsApplied = reloads("applied");
    reloadsRefused = reloads("refused");
    reloadsRestartPending = reloads("restart_pending");
    reloadsUnreadable = reloads("unreadable");
    Gauge.builder("narwhal.config.restart.pending", restartPending, AtomicInteger::get)
        .description("fleet-file keys changed by a reload that take effect only at the next restart").register(registry);
    track(engines);
  }

  /**
   * Registers the per-engine series of engines (idempotent; new engines after a reload); an engine no longer listed
   * keeps its series until its last leg has ended, then they are dropped.
   */
  public void track(List<EngineConfig> engines) {
    Set<String> listed = engines.stream().map(EngineConfig::iid).collect(Collectors.toSet());
    retired.removeAll(listed);
    resident.keySet().stream().filter(iid -> !listed.contains(iid)).forEach(retired::add);
    List.copyOf(retired).forEach(this::dropIfIdle);
    engines.forEach(e -> cached(resident, e.iid(), this::residentGauges));
  }

  private void dropIfIdle(String iid) {
    AtomicInteger[] byPhase = resident.get(iid);
    if (!retired.contains(iid) || byPhase == null || Arrays.stream(byPhase).anyMatch(n -> n.get() != 0)) return;
    resident.remove(iid);
    registry.find("narwhal.resident.requests").tag("iid", iid).meters().forEach(registry::remove);
  }

  private Counter counter(String name, String description) {
    return Counter.builder(name).description(description).register(registry);
  }

  private Timer latency(String name, String description) {
    return Timer.builder(name).description(description).publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(120)).register(registry);
  }

  /** A leg placed, with why placement chose its engine. */
  void placed(Phase phase, String reason) {
    placementCounter(phase, reason).increment();
  }

  private Counter placementCounter(Phase phase, String reason) {
    return cached(placements.get(phase.ordinal()), reason, r -> Counter.builder("narwhal.placement.decisions")
        .description("legs placed, by phase and by why placement chose the engine")
        .tags("phase", phase.wireName(), "reason", r).register(registry));
  }

  private Counter failedCounter(String reason) {
    return cached(failed, reason, r -> Counter.builder("narwhal.failed").description("requests failed, by reason")
        .tag("reason", r).register(registry));
  }

  private Counter expiredCounter(String reason) {
    return cached(expired, reason, r -> Counter.builder("narwhal.expired").description("requests expired, by reason")
        .tag("reason", r).register(registry));
  }

  private Counter rejectedCounter(String reason) {
    return cached(rejected, reason, r -> rejectedCounter(registry, r, ""));
  }

  /**
   * {@code narwhal_rejected_total{reason, model}}: {@code model} is the model a {@code no_engine} refusal named (bounded as
   * the per-model series are), empty for a refusal before the request's model is known.
   */
  static Counter rejectedCounter(MeterRegistry registry, String reason, String model) {
    return Counter.builder("narwhal.rejected").description("requests rejected at admission, by reason and model")
        .tags("reason", reason, "model", model).register(registry);
  }

  private Counter attemptFailures(String phase, String reason) {
    return cached(cached(attemptFailures, phase, p -> new ConcurrentHashMap<>()), reason, r ->
        Counter.builder("narwhal.attempt.failures").description("failed legs, by phase and fault reason")
            .tags("phase", phase, "reason", r).register(registry));
  }

  private Counter reloads(String outcome) {
    return Counter.builder("narwhal.config.reloads").description("fleet file reloads, by outcome").tag("outcome", outcome)
        .register(registry);
  }

  private AtomicInteger residentGauge(String iid, Phase phase) {
    return cached(resident, iid, this::residentGauges)[phase.ordinal()];
  }

  /** The meter registered for {@code key}, registering it on first use only: no registry lookup per request. */
  private static <V> V cached(Map<String, V> meters, String key, Function<String, V> register) {
    V meter = meters.get(key);
    return meter != null ? meter : meters.computeIfAbsent(key, register);
  }

  private AtomicInteger[] residentGauges(String iid) {
    AtomicInteger[] byPhase = new AtomicInteger[Phase.values().length];
    for (Phase phase : Phase.values()) {
      AtomicInteger value = new AtomicInteger();
      Gauge.builder("narwhal.resident.requests", value, AtomicInteger::get)
          .description("legs this router has reserved on an engine, by phase").tags("iid", iid, "phase", phase.wireName())
          .register(registry);
      byPhase[phase.ordinal()] = value;
    }
    return byPhase;
  }

  public void offered() { offered.increment(); }
  public void served(boolean afterRetry) {
    served.increment();
    if (afterRetry) servedAfterRetry.increment();
  }
  public void failed(String reason) { failedCounter(reason).increment(); }
  public void expired(String reason) { expiredCounter(reason).increment(); }
  public void rejected(String reason) { rejectedCounter(reason).increment(); }

  private final Map<String, Timer> flowWaits = new java.util.HashMap<>();

  /** An attempt of a tenant of class {@code priorityClass} waited {@code nanos} for its turn. */
  void flowWait(String priorityClass, long nanos) {
    Timer timer = flowWaits.get(priorityClass);
    if (timer != null) timer.record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /** A tenant's counters (tagged by its name and class) with the settings last seen (a reload makes new ones). */
  private record TenantCounters(narwhal.common.config.TenantConfig tenant, Counter admitted, Counter overQuota) {
  }

  private final java.util.Map<String, TenantCounters> tenantRequests = new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.Map<String, Counter> tenantTokens = new java.util.concurrent.ConcurrentHashMap<>();

  /** A request of {@code tenant} admitted or refused by its quotas ({@code narwhal_tenant_requests_total}). */
  void tenantRequest(narwhal.common.config.TenantConfig tenant, boolean admitted) {
    // every request: found by the name's cached hash and the settings' identity, not by hashing the whole record
    TenantCounters counters = tenantRequests.get(tenant.name());
    if (counters == null || counters.tenant() != tenant) {
      counters = counters != null && counters.tenant().priorityClass().equals(tenant.priorityClass())
          ? new TenantCounters(tenant, counters.admitted(), counters.overQuota())
          : new TenantCounters(tenant, tenantCounter(tenant, "admitted"), tenantCounter(tenant, "over_quota"));
      tenantRequests.put(tenant.name(), counters);
    }
    (admitted ? counters.admitted() : counters.overQuota()).increment();
  }

  private Counter tenantCounter(narwhal.common.config.TenantConfig t, String outcome) {
    return Counter.builder("narwhal.tenant.requests")
        .description("requests by tenant and priority class, admitted or refused by the tenant's quotas")
        .tags("tenant", t.name(), "class", t.priorityClass(), "outcome", outcome).register(registry);
  }

  /** Prompt and completion tokens of a request of {@code tenant}, from the engine's usage ({@code narwhal_tenant_tokens_total}). */
  void tenantTokens(narwhal.common.config.TenantConfig tenant, long tokens) {
    if (tokens <= 0) return;
    tenantTokens.computeIfAbsent(tenant.name(), k -> Counter.builder("narwhal.tenant.tokens")
        .description("prompt and completion tokens by tenant, from the engines' usage").tag("tenant", tenant.name())
        .register(registry)).increment(tokens);
  }
  public void cancelled() { cancelled.increment(); }
  public void invalid() { invalid.increment(); }
  public void prefillAttempt() { prefillAttempts.increment(); }
  public void decodeAttempt() { decodeAttempts.increment(); }
  public void retryAttempt() { retryAttempts.increment(); }
  public void retryDenied() { retryDenied.increment(); }
  public void handoffLeft() { handoffsLeft.increment(); }
  /** Prefill handoffs this replica left to their producers' KV leases since it started. */
  public long handoffsLeft() { return (long) handoffsLeft.count(); }
  public void attemptFailure(String phase, String reason) { attemptFailures(phase, reason).increment(); }
  public void ttft(long nanos) { ttft.record(nanos, TimeUnit.NANOSECONDS); }
  public void firstByte(long nanos) { firstByte.record(nanos, TimeUnit.NANOSECONDS); }
  public void configReload(boolean applied) { (applied ? reloadsApplied : reloadsRefused).increment(); }

  /** A reload whose only changes are keys read at start: nothing applied, a restart pending. */
  public void configRestartPending(int keys) {
    restartPending.set(keys);
    if (keys > 0) reloadsRestartPending.increment();
  }

  public void restartPendingKeys(int keys) {
    restartPending.set(keys);
  }

  /** The fleet file became unreadable (once per such spell). */
  public void configUnreadable() {
    reloadsUnreadable.increment();
  }

  /** A reservation taken (+1) or released (−1) on an engine for a phase. */
  public void resident(String iid, Phase phase, int delta) {
    if (residentGauge(iid, phase).addAndGet(delta) == 0 && !retired.isEmpty()) dropIfIdle(iid);
  }

  public MeterRegistry registry() {
    return registry;
  }
}
