package narwhal.placement;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.Set;
import java.util.concurrent.TimeUnit;

import static narwhal.placement.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An engine read less often because it idles ({@code placement.idle_metrics_interval_s}) is still known to be idle
 * between its readings: real engines' {@code /metrics} read by a real {@link LoadReadings}, placement on its table.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IdleCadenceTest {
  private Vertx engines;

  @BeforeEach
  void start() {
    engines = Vertx.vertx();
  }

  @AfterEach
  void stop() throws Exception {
    engines.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private Future<String> engine(int running) {
    String body = "vllm:num_requests_running " + running + "\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.1\n";
    return engines.createHttpServer().requestHandler(r -> r.response().end(body)).listen(0, "127.0.0.1")
        .map(server -> "http://127.0.0.1:" + server.actualPort());
  }

  private static EngineLoad load(PlacementTable table, String iid) {
    return table.view().stream().filter(v -> v.iid().equals(iid)).findFirst().orElseThrow().load();
  }

  @Test
  void anIdleEngineBetweenItsSlowerReadingsIsIdleNotUnknown(Vertx vertx, VertxTestContext ctx) {
    // D1 idles, so it is read every 2, then 4 intervals; D0 runs a request and is read every interval. Between two of
    // D1's readings, once its reading was three intervals old, it counted as unknown (busier than the busiest engine):
    // the next decode went to the busy D0 and none to the idle D1 until its next reading, so an idle engine took no
    // leg for most of its slower interval and the fleet's idle engines were the ones placement avoided.
    JsonObject placement = new JsonObject().put("policy", "load").put("metrics_interval_s", 0.2).put("metrics_timeout_s", 0.5)
        .put("idle_metrics_interval_s", 1.6);
    vertx.runOnContext(v -> Future.all(engine(0), engine(1), engine(0)).onComplete(ctx.succeeding(all -> {
      NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", "m").put("placement", placement).put("engines", new JsonArray()
          .add(new JsonObject().put("iid", "P0").put("url", all.resultAt(0)).put("role", "prefill"))
          .add(new JsonObject().put("iid", "D0").put("url", all.resultAt(1)).put("role", "decode"))
          .add(new JsonObject().put("iid", "D1").put("url", all.resultAt(2)).put("role", "decode"))));
      PlacementTable table = new PlacementTable(config.engines(), System::currentTimeMillis);
      table.configure(config.placement(), config.recovery().ejectAfter());
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table, "placement-test", () -> "",
          new SimpleMeterRegistry(), () -> { });
      readings.track(config.engines());
      readings.arm();
      long stale = 3 * config.placement().metricsIntervalMs();
      // D1 on its slower cadence (4 intervals and more), its reading older than three intervals, not yet read again
      until(vertx, () -> {
        EngineLoad d1 = load(table, "D1");
        return d1 != null && d1.ok() && d1.idleReadings() >= 2 && System.currentTimeMillis() - d1.readAtMs() > stale + 20;
      }).onComplete(ctx.succeeding(x -> ctx.verify(() -> {
        EngineLoad d1 = load(table, "D1");
        EngineLoad d0 = load(table, "D0");
        assertTrue(d0.ok() && d0.running() == 1.0, "D0 busy: " + d0);
        narwhal.common.bus.Reservation leg = table.reserve(Phase.DECODE, Set.of(), null, null).orElseThrow();
        assertEquals("D1", leg.iid(), "the idle D1 takes the decode, its reading " + (System.currentTimeMillis() - d1.readAtMs())
            + " ms old on its slower cadence (" + d1 + ")");
        readings.stop();
        ctx.completeNow();
      })));
    })));
  }
}
