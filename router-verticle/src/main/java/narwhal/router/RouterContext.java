package narwhal.router;

import io.vertx.core.Vertx;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.EngineClient;
import narwhal.router.telemetry.Tracing;

import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * What every request lifecycle of one router instance (event loop) shares: the current configuration, its engine
 * client and control-bus client (placement and breaker), and the replica's retry budget, attested engine facts,
 * journal, metrics, in-flight admission (in-flight count, stop sequence) and the jitter source; and the loop's
 * {@link EndOfTurn}, where relays write what a turn brought; the replica's per-model series and its tracing.
 */
record RouterContext(Vertx vertx, Supplier<NarwhalConfig> config, EngineClient engines, ControlBusClient controlBus,
                     RetryBudget retryBudget, EngineFacts facts, Journal journal, RouterMetrics metrics,
                     DoubleSupplier jitter, Admission admission, EndOfTurn endOfTurn, ModelMetrics models,
                     Tracing tracing) {
}
