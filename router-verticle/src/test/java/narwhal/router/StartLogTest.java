package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A router start, and the requests after it, log no warning of its libraries. Vert.x registers its own gauges again
 * for every connection, request and connection pool, and Micrometer warns at the first such registration of the
 * process, then logs the others at debug level ({@link GuardedMetricsFactory}); the capture takes every level of
 * Micrometer's, so a re-registration that an earlier test in this JVM made the debug-level one still shows here.
 */
@Timeout(60)
class StartLogTest {

  @Test
  void aRouterStartLogsNoMicrometerWarning() throws Exception {
    Set<String> logged = capturing("io.micrometer", Level.ALL,
        r -> r.getLevel().intValue() >= Level.WARNING.intValue() || String.valueOf(r.getMessage()).contains("has been already registered"),
        () -> {
          try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
            JsonObject body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hello").put("max_tokens", 4);
            assertEquals(200, h.post("/v1/completions", body).status());
            assertEquals(200, h.post("/v1/completions", body.copy().put("stream", true)).status());
            assertEquals(200, h.get("/metrics").status());
          }
        });
    assertEquals(Set.of(), logged, "what Micrometer logged");
  }

  /** {@code server.health_port}: its listener's own Vert.x instance is made without Vert.x's warning about a second instance. */
  @Test
  void aReplicaWithAHealthPortStartsWithoutAVertxWarning() throws Exception {
    Set<String> logged = capturing("io.vertx", Level.INFO, r -> r.getLevel().intValue() >= Level.WARNING.intValue(), () -> {
      try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
          .put("server", json.getJsonObject("server").put("health_port", 0)))) {
        assertTrue(h.router.healthPort() > 0, "the health port listens");
      }
    });
    assertEquals(Set.of(), logged, "what Vert.x warned");
  }

  interface Run {
    void run() throws Exception;
  }

  /** The records of {@code logger} (and below) that {@code kept} keeps while {@code run} runs, with {@code logger} at {@code level}. */
  private static Set<String> capturing(String logger, Level level, Predicate<LogRecord> kept, Run run) throws Exception {
    Logger log = Logger.getLogger(logger);
    Level before = log.getLevel();
    Set<String> logged = ConcurrentHashMap.newKeySet();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord record) {
        if (kept.test(record)) logged.add(record.getLevel() + " " + record.getLoggerName() + ": " + record.getMessage());
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    log.setLevel(level);
    log.addHandler(capture);
    try {
      run.run();
    } finally {
      log.removeHandler(capture);
      log.setLevel(before);
    }
    return logged;
  }
}
