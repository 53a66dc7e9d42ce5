package narwhal.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class DefaultConfFileTest {

  private static NarwhalConfig load() throws IOException {
    return NarwhalConfig.parse(Files.readString(Path.of("..", "conf", "narwhal.json")));
  }

  @Test
  void demoFleetIsTwoPrefillAndTwoDecodeSimulatedEngines() throws IOException {
    NarwhalConfig config = load();
    assertEquals("Qwen/Qwen3-0.6B", config.model());
    assertTrue(config.sim().embedded());
    assertNull(config.engineContract());
    assertEquals(8000, config.server().port());
    assertEquals(List.of(
            new EngineConfig("P0", "http://127.0.0.1:8101", Role.PREFILL, "", "", "Qwen/Qwen3-0.6B"),
            new EngineConfig("P1", "http://127.0.0.1:8102", Role.PREFILL, "", "", "Qwen/Qwen3-0.6B"),
            new EngineConfig("D0", "http://127.0.0.1:8103", Role.DECODE, "", "", "Qwen/Qwen3-0.6B"),
            new EngineConfig("D1", "http://127.0.0.1:8104", Role.DECODE, "", "", "Qwen/Qwen3-0.6B")),
        config.engines());
  }

  @Test
  void everyOtherSectionIsWrittenWithItsDefaults() throws IOException {
    NarwhalConfig config = load();
    assertEquals(ServerConfig.defaults(), config.server());
    assertEquals(ServingConfig.defaults(), config.serving());
    assertEquals(EngineSettings.defaults(), config.engine());
    assertEquals(RecoveryConfig.defaults(), config.recovery());
    assertEquals(ClusterConfig.defaults(), config.cluster());
    assertEquals(AdminConfig.defaults(), config.admin());
    assertEquals(JournalConfig.defaults(), config.journal());
    assertEquals(TelemetryConfig.defaults(), config.telemetry());
  }
}
