package narwhal.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The router's request metrics (CONTRACT §8.3), named so Prometheus shows {@code narwhal_*}. Label values
 * come from fixed sets (fault reasons, phases), never from request data.
 */
public final class RouterMetrics {
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
  private final Timer ttft;
  private final Timer firstByte;

  public RouterMetrics(MeterRegistry registry, Supplier<Number> retryCredits) {
    this.registry = registry;
    offered = Counter.builder("narwhal.offered").description("requests offered to the router").register(registry);
    served = Counter.builder("narwhal.served").description("requests completed").register(registry);
    cancelled = Counter.builder("narwhal.cancelled").description("requests the client abandoned").register(registry);
    invalid = Counter.builder("narwhal.invalid.requests").description("requests refused as invalid").register(registry);
    prefillAttempts = Counter.builder("narwhal.prefill.attempts").register(registry);
    decodeAttempts = Counter.builder("narwhal.decode.attempts").register(registry);
    retryAttempts = Counter.builder("narwhal.retry.attempts").register(registry);
    servedAfterRetry = Counter.builder("narwhal.served.after.retry").register(registry);
    retryDenied = Counter.builder("narwhal.retry.denied").register(registry);
    registry.gauge("narwhal.retry.credits", retryCredits, s -> s.get().doubleValue());
    ttft = latency("narwhal.ttft", "arrival to producer HTTP completion");
    firstByte = latency("narwhal.first.byte", "arrival to the first decode output");
  }

  private Timer latency(String name, String description) {
    return Timer.builder(name).description(description).publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(120)).register(registry);
  }

  public void offered() { offered.increment(); }
  public void served(boolean afterRetry) {
    served.increment();
    if (afterRetry) servedAfterRetry.increment();
  }
  public void failed(String reason) { registry.counter("narwhal.failed", "reason", reason).increment(); }
  public void expired(String reason) { registry.counter("narwhal.expired", "reason", reason).increment(); }
  public void rejected(String reason) { registry.counter("narwhal.rejected", "reason", reason).increment(); }
  public void cancelled() { cancelled.increment(); }
  public void invalid() { invalid.increment(); }
  public void prefillAttempt() { prefillAttempts.increment(); }
  public void decodeAttempt() { decodeAttempts.increment(); }
  public void retryAttempt() { retryAttempts.increment(); }
  public void retryDenied() { retryDenied.increment(); }
  public void attemptFailure(String phase, String reason) {
    registry.counter("narwhal.attempt.failures", "phase", phase, "reason", reason).increment();
  }
  public void ttft(long nanos) { ttft.record(nanos, TimeUnit.NANOSECONDS); }
  public void firstByte(long nanos) { firstByte.record(nanos, TimeUnit.NANOSECONDS); }

  public MeterRegistry registry() {
    return registry;
  }
}
