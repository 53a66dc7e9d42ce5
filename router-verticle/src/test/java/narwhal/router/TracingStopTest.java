package narwhal.router;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import narwhal.router.telemetry.Tracing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A graceful stop with a collector that takes an export and never answers (docs/operations.md#graceful-stop): the
 * router's stop completes while the collector still holds the export open (the exporter's own 10 s timeout has not
 * ended it), the flush abandoned with a warning, instead of waiting for the exporter on top of the stop's own bounds.
 */
@Timeout(60)
class TracingStopTest {
  private static final Logger TRACING_LOG = Logger.getLogger(Tracing.class.getName());

  @Test
  void aCollectorThatNeverAnswersDoesNotHoldUpTheStop() throws Exception {
    Vertx collectorVertx = Vertx.vertx();
    List<String> warnings = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord record) {
        warnings.add(record.getMessage());
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    TRACING_LOG.addHandler(capture);
    try {
      Promise<Void> exportArrived = Promise.promise();
      AtomicInteger closedExports = new AtomicInteger();
      HttpServer collector = collectorVertx.createHttpServer().requestHandler(req -> {
        req.connection().closeHandler(v -> closedExports.incrementAndGet());
        exportArrived.tryComplete();
      });
      RouterHarness.await(collector.listen(0, "127.0.0.1"));
      RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
              .put("telemetry", new JsonObject().put("otlp_endpoint", "http://127.0.0.1:" + collector.actualPort())),
          (iid, o) -> { }, Map.of("OTEL_BSP_SCHEDULE_DELAY", "20"));
      try {
        assertEquals(200, h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hi")
            .put("max_tokens", 2)).status());
        exportArrived.future().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        // a second request's spans wait in the queue behind the export the collector holds
        assertEquals(200, h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "ho")
            .put("max_tokens", 2)).status());
      } finally {
        h.close();
      }
      assertEquals(0, closedExports.get(), "the stop ended while the collector still held the export");
      assertTrue(warnings.stream().anyMatch(w -> w.contains("flush abandoned")), "the abandoned flush is logged: " + warnings);
    } finally {
      TRACING_LOG.removeHandler(capture);
      collectorVertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }
}
