package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code logging.format: "json"} (issue 42, item 5): a replica started with it writes every log record as one JSON
 * object per line, a stack trace inside its record; any other format is refused naming the key.
 */
@Timeout(120)
class JsonLogsTest {

  @Test
  void aRecordWithAStackTraceIsOneLineOfJson() {
    LogRecord record = new LogRecord(Level.WARNING, "engine {0} said \"no\"\nthen hung up");
    record.setParameters(new Object[] {"D0"});
    record.setLoggerName("narwhal.breaker.ClusterSync");
    record.setThrown(new IllegalStateException("broken", new RuntimeException("cause")));
    String line = new JsonLogFormatter().format(record);
    assertEquals(1, line.strip().lines().count(), line);
    JsonObject json = new JsonObject(line);
    assertEquals("WARNING", json.getString("level"));
    assertEquals("narwhal.breaker.ClusterSync", json.getString("logger"));
    assertEquals("engine D0 said \"no\"\nthen hung up", json.getString("message"));
    assertTrue(json.getString("stack").startsWith("java.lang.IllegalStateException: broken"), json.encode());
    assertTrue(json.getString("stack").contains("Caused by: java.lang.RuntimeException: cause"), json.encode());
    assertTrue(json.getString("ts").endsWith("Z"), json.getString("ts"));
  }

  @Test
  void aRecordAboutARequestCarriesItsRequestAndTraceIds() {
    java.util.List<LogRecord> logged = new java.util.ArrayList<>();
    java.util.logging.Logger logger = java.util.logging.Logger.getLogger("narwhal.test.JsonLogsTest");
    java.util.logging.Handler capture = new java.util.logging.Handler() {
      @Override public void publish(LogRecord r) { logged.add(r); }
      @Override public void flush() { }
      @Override public void close() { }
    };
    logger.addHandler(capture);
    try {
      new narwhal.common.log.RequestTag("rid-1", "4bf92f3577b34da6a3ce929d0e0e4736").log(logger, Level.WARNING,
          "journal closed; row not written: {\"rid\":\"rid-1\"}", null);
    } finally {
      logger.removeHandler(capture);
    }
    JsonObject json = new JsonObject(new JsonLogFormatter().format(logged.get(0)));
    assertEquals("rid-1", json.getString("request_id"));
    assertEquals("4bf92f3577b34da6a3ce929d0e0e4736", json.getString("trace_id"));
    assertEquals("journal closed; row not written: {\"rid\":\"rid-1\"}", json.getString("message"));
    assertEquals("journal closed; row not written: {\"rid\":\"rid-1\"}",
        new java.util.logging.SimpleFormatter().formatMessage(logged.get(0)), "text logs print the message as before");
  }

  @Test
  void anUnknownFormatIsRefusedNamingTheKey() {
    JsonObject fleet = new JsonObject().put("model", "m").put("engines", new JsonArray().add(new JsonObject().put("iid", "D0")
        .put("url", "http://127.0.0.1:1"))).put("logging", new JsonObject().put("format", "xml"));
    ConfigException refused = assertThrows(ConfigException.class, () -> NarwhalConfig.fromJson(fleet));
    assertEquals("logging.format", refused.key());
    assertTrue(refused.getMessage().startsWith("logging.format: \"xml\" is not valid"), refused.getMessage());
  }

  @Test
  void aReplicaStartedWithJsonLogsWritesEveryRecordAsJson() throws Exception {
    ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { });
    JsonObject fleet = h.fleetJson();
    fleet.getJsonObject("cluster").put("members", new JsonArray().add("127.0.0.1:" + h.basePort));
    Path file = ReplicaProcess.writeFleet(fleet);
    fleet.put("journal", new JsonObject().put("path", java.nio.file.Files.createTempFile("narwhal-json-logs-journal", ".jsonl").toString()));
    java.nio.file.Files.writeString(file, fleet.encodePrettily());
    try (ReplicaProcess replica = ReplicaProcess.start(file, ClusterHarness.TOKEN, "cluster.port=" + h.basePort,
        "logging.format=json")) {
      assertEquals(200, replica.post("/v1/completions", new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "hi")
          .put("max_tokens", 2)));
      List<String> records = replica.output().lines().filter(l -> l.startsWith("{")).toList();
      assertTrue(records.size() >= 3, "the start logs records: " + replica.output());
      for (String line : records) {
        JsonObject json = new JsonObject(line);
        assertTrue(json.containsKey("level") && json.containsKey("logger") && json.containsKey("message"), line);
      }
      List<String> plain = replica.output().lines().filter(l -> l.matches("^\\d{4}-\\d{2}-\\d{2} .*")).toList();
      assertEquals(List.of(), plain, "no record in the text format");
    } finally {
      h.close();
    }
  }
}
