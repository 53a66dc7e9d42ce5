package narwhal.router;

import io.micrometer.core.instrument.MeterRegistry;
import narwhal.common.config.NarwhalConfig;
import narwhal.router.telemetry.Tracing;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * What the router instances (event loops) of one replica share, made once by {@link RouterVerticle}: the
 * configuration, attested engine facts, metrics, journal, retry budget, admission, who may call, tracing and the
 * answers of {@code /ready}, the client connections open. Every part is thread-safe.
 */
record Replica(Supplier<NarwhalConfig> config, EngineFacts facts, MeterRegistry registry, RouterMetrics metrics,
               Journal journal, RetryBudget retryBudget, Admission admission, Supplier<List<String>> members,
               UnaryOperator<String> env, AtomicReference<Access> access, AtomicReference<List<String>> restartPending,
               ModelMetrics models, Tracing tracing, ResponseOwners responseOwners, ReadinessAnswer readiness,
               ClientConnections connections) {
}
