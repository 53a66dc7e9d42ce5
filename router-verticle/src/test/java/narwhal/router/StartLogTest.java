package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A router start, and the requests after it, log no Micrometer warning. Vert.x registers its own gauges again for
 * every connection, request and connection pool, and Micrometer warns at the first such registration of the
 * process, then logs the others at debug level ({@link GuardedMetricsFactory}). The capture takes every level, so a
 * re-registration that an earlier test in this JVM made the debug-level one still shows here.
 */
@Timeout(60)
class StartLogTest {

  @Test
  void aRouterStartLogsNoMicrometerWarning() throws Exception {
    Logger micrometer = Logger.getLogger("io.micrometer");
    Level before = micrometer.getLevel();
    java.util.Set<String> logged = java.util.concurrent.ConcurrentHashMap.newKeySet();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord record) {
        String message = String.valueOf(record.getMessage());
        if (record.getLevel().intValue() >= Level.WARNING.intValue() || message.contains("has been already registered")) {
          logged.add(record.getLevel() + " " + record.getLoggerName() + ": " + message);
        }
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    micrometer.setLevel(Level.ALL);
    micrometer.addHandler(capture);
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hello").put("max_tokens", 4);
      assertEquals(200, h.post("/v1/completions", body).status());
      assertEquals(200, h.post("/v1/completions", body.copy().put("stream", true)).status());
      assertEquals(200, h.get("/metrics").status());
    } finally {
      micrometer.removeHandler(capture);
      micrometer.setLevel(before);
    }
    assertEquals(java.util.Set.of(), logged, "what Micrometer logged");
  }
}
