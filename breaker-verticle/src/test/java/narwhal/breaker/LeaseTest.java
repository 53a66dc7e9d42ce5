package narwhal.breaker;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.shareddata.Lock;
import narwhal.common.config.ClusterConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Probe leases: one holder at a time, released by it, and taken over once a silent holder's lease ran out. */
class LeaseTest {
  private final Vertx vertx = Vertx.vertx();
  private final java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000);

  @AfterEach
  void close() throws Exception {
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  private SharedBreakerState state() {
    SharedStateGuard guard = new SharedStateGuard(vertx, ClusterConfig.defaults().sharedState(), new SimpleMeterRegistry(), row -> { });
    return new SharedBreakerState(vertx.sharedData(), guard, now::get);
  }

  @Test
  void aLeaseIsExclusiveUntilReleasedOrRunOut() throws Exception {
    SharedBreakerState a = state();
    SharedBreakerState b = state();
    Optional<Lock> held = a.probeLock("D0", 60_000).await(10, TimeUnit.SECONDS);
    assertTrue(held.isPresent());
    assertFalse(b.probeLock("D0", 60_000).await(10, TimeUnit.SECONDS).isPresent(), "one probe of an engine at a time");
    assertTrue(b.probeLock("D9", 60_000).await(10, TimeUnit.SECONDS).isPresent(), "another engine's lease is another lease");
    held.get().release();
    Optional<Lock> next = null;
    for (int i = 0; i < 100 && (next == null || next.isEmpty()); i++) next = b.probeLock("D0", 60_000).await(10, TimeUnit.SECONDS);
    assertTrue(next.isPresent(), "released, it is free");

    Optional<Lock> frozen = a.probeLock("D1", 50).await(10, TimeUnit.SECONDS);
    assertTrue(frozen.isPresent());
    assertFalse(b.probeLock("D1", 60_000).await(10, TimeUnit.SECONDS).isPresent());
    now.addAndGet(51);
    assertTrue(b.probeLock("D1", 60_000).await(10, TimeUnit.SECONDS).isPresent(),
        "a holder that never released (frozen, dead, its release lost) blocks nothing once its lease ran out");
  }
}
