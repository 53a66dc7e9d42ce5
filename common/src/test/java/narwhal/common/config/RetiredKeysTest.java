package narwhal.common.config;

import static narwhal.common.config.Fleets.minimal;
import static narwhal.common.config.Fleets.withSection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Files written before {@code serving.max_connections} was split, and with the keys that never had an effect
 * ({@code engine.pool_timeout_s}, {@code engine.dialect}), still load: each such key is logged once per read with what
 * replaces it, and is not written back.
 */
class RetiredKeysTest {
  private final Logger log = Logger.getLogger("narwhal.common.config");
  private final List<String> warnings = new ArrayList<>();
  private final Handler capture = new Handler() {
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

  @BeforeEach
  void listen() {
    log.addHandler(capture);
  }

  @AfterEach
  void stopListening() {
    log.removeHandler(capture);
  }

  @Test
  void maxConnectionsSetsBothNewKeysAndTheWarningNamesThem() {
    NarwhalConfig c = NarwhalConfig.fromJson(withSection("serving", "{\"max_connections\": 32}"));
    assertEquals(32, c.serving().maxInFlight());
    assertEquals(32, c.engine().maxConnectionsPerEngine());
    assertEquals(1, warnings.size(), warnings.toString());
    String warning = warnings.get(0);
    assertTrue(warning.startsWith("serving.max_connections is deprecated"), warning);
    assertTrue(warning.contains("serving.max_in_flight") && warning.contains("engine.max_connections_per_engine"),
        warning);
    JsonObject written = c.serving().toJson();
    assertFalse(written.containsKey("max_connections"), written.encode());
    assertEquals(32, written.getInteger("max_in_flight"));
  }

  @Test
  void aNewKeyBesideTheOldOneWins() {
    NarwhalConfig c = NarwhalConfig.fromJson(minimal()
        .put("serving", new JsonObject().put("max_connections", 32).put("max_in_flight", 100))
        .put("engine", new JsonObject().put("max_connections_per_engine", 50)));
    assertEquals(100, c.serving().maxInFlight());
    assertEquals(50, c.engine().maxConnectionsPerEngine());
  }

  @Test
  void theNewKeysAreIndependent() {
    NarwhalConfig c = NarwhalConfig.fromJson(minimal()
        .put("serving", new JsonObject().put("max_in_flight", 100))
        .put("engine", new JsonObject().put("max_connections_per_engine", 8)));
    assertEquals(100, c.serving().maxInFlight());
    assertEquals(8, c.engine().maxConnectionsPerEngine());
    assertEquals(List.of(), warnings);
  }

  @Test
  void theOldOverrideStillWorksWithTheWarning() {
    NarwhalConfig c = ConfigOverrides.of(Map.of("NARWHAL_SERVING_MAX_CONNECTIONS", "12"), List.of())
        .parse(minimal().encode());
    assertEquals(12, c.serving().maxInFlight());
    assertEquals(12, c.engine().maxConnectionsPerEngine());
    assertEquals(1, warnings.size(), warnings.toString());
  }

  @Test
  void keysThatNeverHadAnEffectLoadWithAWarningAndAreDropped() {
    NarwhalConfig c = NarwhalConfig.fromJson(withSection("engine", "{\"pool_timeout_s\": 5, \"dialect\": \"vllm\"}"));
    assertEquals(NarwhalConfig.fromJson(minimal()), c);
    assertEquals(2, warnings.size(), warnings.toString());
    assertTrue(warnings.get(0).startsWith("engine.pool_timeout_s is deprecated"), warnings.get(0));
    assertTrue(warnings.get(1).startsWith("engine.dialect is deprecated"), warnings.get(1));
    assertFalse(c.engine().toJson().containsKey("pool_timeout_s"));
    assertFalse(c.engine().toJson().containsKey("dialect"));
  }

  @Test
  void theConnectionPoolIsReadAtStartAndTheInFlightLimitHotReloads() {
    assertTrue(StartOnlyKeys.startOnly("engine.max_connections_per_engine"));
    assertFalse(StartOnlyKeys.startOnly("serving.max_in_flight"));
  }
}
