package narwhal.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.vertx.core.json.JsonObject;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The per-model series of docs/metrics.md: tokens served by kind (as the engine's usage reports them) and the latency
 * histograms operators expect of an LLM server (inter-token latency, time per output token, end to end) and of a
 * disaggregated one (the prefill leg, the handoff's age at decode dispatch, the decode leg's first token), each with
 * fixed buckets suited to its range, and the requests refused because no engine of the model could take a phase. The model label is bounded: every configured model's series exist (at zero) from
 * start and from the reload that adds it; an adapter's once placement has accepted a request for it (an engine lists
 * it); a name a client made up never becomes a label.
 */
final class ModelMetrics {
  static final String PROMPT = "prompt";
  static final String COMPLETION = "completion";
  static final String CACHED = "cached";
  static final String PREFILL_CACHED = "prefill_cached";

  private static final Duration[] TOKEN_GAPS = ms(1, 2.5, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 750,
      1000, 2500, 5000);
  private static final Duration[] REQUEST = ms(50, 100, 250, 500, 1000, 2500, 5000, 10_000, 20_000, 30_000, 60_000,
      120_000, 300_000, 600_000);
  private static final Duration[] PREFILL = ms(5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 20_000, 30_000,
      60_000, 120_000);
  private static final Duration[] HANDOFF = ms(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30_000);
  private static final Duration[] FIRST_TOKEN = ms(1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000);

  private final MeterRegistry registry;
  private final Map<String, Model> models = new ConcurrentHashMap<>();

  ModelMetrics(MeterRegistry registry, List<String> configured) {
    this.registry = registry;
    register(configured);
  }

  /** Registers the series of the configured models (at zero), e.g. those a reload added. */
  void register(List<String> configured) {
    configured.forEach(this::of);
  }

  /** The series of {@code model} (one placement accepted), registered (at zero) on first use. */
  Model of(String model) {
    Model m = models.get(model);
    return m != null ? m : models.computeIfAbsent(model, Model::new);
  }

  /** One model's meters. */
  final class Model {
    private final Counter promptTokens;
    private final Counter completionTokens;
    private final Counter cachedTokens;
    private final Counter prefillCachedTokens;
    private final Timer interToken;
    private final Timer perOutputToken;
    private final Timer e2e;
    private final Timer prefillLeg;
    private final Timer handoffAge;
    private final Timer decodeFirstToken;
    private final Counter noEngine;

    Model(String model) {
      noEngine = RouterMetrics.rejectedCounter(registry, "no_engine", model);
      promptTokens = tokens(model, PROMPT);
      completionTokens = tokens(model, COMPLETION);
      cachedTokens = tokens(model, CACHED);
      prefillCachedTokens = tokens(model, PREFILL_CACHED);
      interToken = timer("narwhal.inter.token.latency", "time between consecutive output chunks of a decode", model, TOKEN_GAPS);
      perOutputToken = timer("narwhal.time.per.output.token", "a completed request's decode time after its first output, per further token",
          model, TOKEN_GAPS);
      e2e = timer("narwhal.e2e.latency", "arrival to the end of a completed request", model, REQUEST);
      prefillLeg = timer("narwhal.prefill.leg.duration", "a successful prefill leg, from dispatch to the producer's answer", model, PREFILL);
      handoffAge = timer("narwhal.handoff.age", "the KV handoff's age when its decode is dispatched (since the producer answered)",
          model, HANDOFF);
      decodeFirstToken = timer("narwhal.decode.ttft", "decode dispatch to the decode leg's first output", model, FIRST_TOKEN);
    }

    private Counter tokens(String model, String kind) {
      return Counter.builder("narwhal.tokens").description("tokens of completed requests, as the engine's usage reports them")
          .tags("model", model, "kind", kind).register(registry);
    }

    private Timer timer(String name, String description, String model, Duration[] buckets) {
      return Timer.builder(name).description(description).tag("model", model).serviceLevelObjectives(buckets)
          .register(registry);
    }

    /** Counts the engine's {@code usage} of a completed request: prompt, completion and cached prompt tokens. */
    void usage(JsonObject usage) {
      if (usage == null) return;
      if (usage.getValue("prompt_tokens") instanceof Number n) promptTokens.increment(n.doubleValue());
      if (usage.getValue("completion_tokens") instanceof Number n) completionTokens.increment(n.doubleValue());
      if (usage.getValue("prompt_tokens_details") instanceof JsonObject details
          && details.getValue("cached_tokens") instanceof Number n) {
        cachedTokens.increment(n.doubleValue());
      }
    }

    /**
     * The prompt tokens a completed request's producer served from its prefix cache, as its prefill answer reported
     * them: what prefix placement saved (a disaggregated decode's usage counts every transferred token as cached).
     */
    void prefillCached(int tokens) {
      prefillCachedTokens.increment(tokens);
    }

    /** A request for this model refused before any leg: no serving engine of it could take a phase. */
    void noEngine() { noEngine.increment(); }
    void interToken(long nanos) { interToken.record(nanos, TimeUnit.NANOSECONDS); }
    void perOutputToken(long nanos) { perOutputToken.record(nanos, TimeUnit.NANOSECONDS); }
    void e2e(long nanos) { e2e.record(nanos, TimeUnit.NANOSECONDS); }
    void prefillLeg(long nanos) { prefillLeg.record(nanos, TimeUnit.NANOSECONDS); }
    void handoffAge(long nanos) { handoffAge.record(nanos, TimeUnit.NANOSECONDS); }
    void decodeFirstToken(long nanos) { decodeFirstToken.record(nanos, TimeUnit.NANOSECONDS); }
  }

  private static Duration[] ms(double... values) {
    Duration[] out = new Duration[values.length];
    for (int i = 0; i < values.length; i++) out[i] = Duration.ofNanos(Math.round(values[i] * 1_000_000));
    return out;
  }
}
