package narwhal.router;

import io.vertx.core.Vertx;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.client.EngineClient;

import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * What every request lifecycle of one router shares: the current configuration, the engine client,
 * placement, the retry budget, attested engine facts, the journal and metrics, and the jitter source.
 */
record RouterContext(Vertx vertx, Supplier<NarwhalConfig> config, EngineClient engines, PlacementClient placement,
                     RetryBudget retryBudget, EngineFacts facts, Journal journal, RouterMetrics metrics,
                     DoubleSupplier jitter) {
}
