package narwhal.breaker;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.circuitbreaker.CircuitBreaker;
import io.vertx.circuitbreaker.CircuitBreakerOptions;
import io.vertx.circuitbreaker.CircuitBreakerState;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ClusterConfig;

import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * A Vert.x circuit breaker around every operation on the cluster's shared state ({@code cluster.shared_state}): each
 * operation fails after the operation timeout; after the failure threshold the guard opens and operations fail at once,
 * so the replica decides on its own book; after the reset timeout one operation is let through (half open) and its
 * success closes the guard. Each change of state is a journal event and the gauge
 * {@code narwhal_shared_state_breaker{state}}; a close runs the handler given to {@link #onClose}.
 */
final class SharedStateGuard {
  private static final Logger LOG = Logger.getLogger(SharedStateGuard.class.getName());

  private final CircuitBreaker breaker;
  private Supplier<Future<Void>> onClose = Future::succeededFuture;

  SharedStateGuard(Vertx vertx, ClusterConfig.StateGuard settings, MeterRegistry registry, Consumer<JsonObject> journal) {
    this.breaker = CircuitBreaker.create("narwhal-shared-state", vertx, new CircuitBreakerOptions()
        .setTimeout(settings.operationTimeoutMs()).setMaxFailures(settings.failureThreshold())
        .setResetTimeout(settings.resetTimeoutMs()).setNotificationAddress(null));
    for (CircuitBreakerState s : CircuitBreakerState.values()) {
      Gauge.builder("narwhal.shared.state.breaker", breaker, b -> b.state() == s ? 1 : 0)
          .description("1 for the state the guard of the cluster's shared state is in").tag("state", wireName(s))
          .register(registry);
    }
    breaker.openHandler(v -> changed(journal, "could not reach the shared state; deciding on this replica's book"));
    breaker.halfOpenHandler(v -> changed(journal, "trying the shared state again"));
    breaker.closeHandler(v -> {
      changed(journal, "the shared state answers again; resyncing");
      onClose.get().onFailure(err -> LOG.warning("resync after the guard closed failed (the next resync retries): " + err.getMessage()));
    });
  }

  /** Runs one shared-state operation under the guard. */
  <T> Future<T> run(Supplier<Future<T>> operation) {
    return breaker.execute(operation);
  }

  /** Whether operations go through to the cluster (false while the guard is open or trying again). */
  boolean closed() {
    return breaker.state() == CircuitBreakerState.CLOSED;
  }

  /** {@code closed}, {@code open} or {@code half_open}. */
  String state() {
    return wireName(breaker.state());
  }

  void onClose(Supplier<Future<Void>> handler) {
    this.onClose = handler;
  }

  void close() {
    breaker.close();
  }

  private void changed(Consumer<JsonObject> journal, String what) {
    String state = state();
    LOG.warning(() -> "shared-state guard " + state + ": " + what);
    journal.accept(new JsonObject().put("event", "shared_state_breaker").put("state", state).put("detail", what));
  }

  private static String wireName(CircuitBreakerState s) {
    return s.name().toLowerCase(Locale.ROOT);
  }
}
