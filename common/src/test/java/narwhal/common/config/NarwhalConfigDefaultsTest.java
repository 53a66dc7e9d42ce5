package narwhal.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

class NarwhalConfigDefaultsTest {

  private final NarwhalConfig config = NarwhalConfig.fromJson(Fleets.minimal());

  @Test
  void requiredKeysAreRead() {
    assertEquals("m", config.model());
    assertEquals(List.of("P0", "D0"), config.engines().stream().map(EngineConfig::iid).toList());
    assertNull(config.engineContract());
  }

  @Test
  void engineEntryDefaults() {
    EngineConfig both = NarwhalConfig.fromJson(Fleets.minimal().put("engines",
        new JsonArray().add(new JsonObject()
            .put("iid", "B0").put("url", "http://h:1")))).engines().get(0);
    assertEquals(new EngineConfig("B0", "http://h:1", Role.BOTH, "", "", "m"), both);
  }

  @Test
  void serverDefaults() {
    assertEquals(new ServerConfig("0.0.0.0", 8000, Runtime.getRuntime().availableProcessors(), "", "", narwhal.common.config.CorsConfig.defaults(), -1, 75.0, 0, "", ""), config.server());
  }

  @Test
  void servingDefaults() {
    ServingConfig s = config.serving();
    assertEquals(768, s.maxInFlight());
    assertEquals(4_194_304L, s.maxRequestBytes());
    assertEquals(16_777_216L, s.maxResponseBytes());
    assertEquals(600.0, s.requestTimeoutS());
    assertEquals(600_000L, s.requestTimeoutMs());
    assertEquals(120_000L, s.prefillTimeoutMs());
    assertEquals(1, s.maxAttempts());
    assertEquals(0.1, s.retryBaseS());
    assertEquals(100L, s.retryBaseMs());
    assertEquals(1000L, s.retryCapMs());
    assertEquals(10, s.retryBudget());
    assertEquals(0.1, s.retryReplenish());
    assertEquals(30_000L, s.gracefulTimeoutMs());
    assertEquals(5_000L, s.drainDelayMs());
  }

  @Test
  void engineDefaults() {
    EngineSettings e = config.engine();
    assertEquals(2.5, e.firstTokenTimeoutS());
    assertEquals(2500L, e.firstTokenTimeoutMs());
    assertEquals(10_000L, e.decodeReadTimeoutMs());
    assertEquals(10_000L, e.connectTimeoutMs());
    assertEquals(768, e.maxConnectionsPerEngine());
    assertEquals(5_000L, e.healthTimeoutMs());
    assertEquals(30_000L, e.kvLeaseMs());
    assertEquals("nixl", e.connector());
    assertEquals("", e.engineApiKeyEnv());
  }

  @Test
  void recoveryDefaults() {
    RecoveryConfig r = config.recovery();
    assertEquals(3, r.ejectAfter());
    assertEquals(1000L, r.monitorIntervalMs());
    assertEquals(10, r.readmitEvery());
    assertEquals(10_000L, r.readmitIntervalMs());
    assertEquals(10, r.livenessEvery());
    assertEquals(10_000L, r.livenessIntervalMs());
    assertEquals(2, r.livenessMisses());
    assertEquals(0L, r.failureQuarantineMs());
    assertEquals(RestartPolicy.INDIVIDUAL, r.engineRestartPolicy());
    assertFalse(r.wholeWave());
  }

  @Test
  void otherSectionDefaults() {
    assertEquals(new ClusterConfig(false, "narwhal", List.of("127.0.0.1"), 5701, "127.0.0.1"),
        config.cluster());
    assertEquals("NARWHAL_ADMIN_TOKEN", config.admin().tokenEnv());
    assertEquals("journal.jsonl", config.journal().path());
    assertEquals(268_435_456L, config.journal().maxBytes());
    assertEquals(5, config.journal().keep());
    assertFalse(config.sim().embedded());
  }

  @Test
  void sectionDefaultsMatchAnEmptySection() {
    NarwhalConfig empties = NarwhalConfig.fromJson(Fleets.minimal()
        .put("server", new JsonObject())
        .put("serving", new JsonObject())
        .put("recovery", new JsonObject()));
    assertEquals(config, empties);
  }

  @Test
  void engineLookupByIid() {
    assertEquals(Role.DECODE, config.engine("D0").orElseThrow().role());
    assertTrue(config.engine("X9").isEmpty());
  }

  @Test
  void wholeWaveIsAcceptedWithAContract() {
    NarwhalConfig wave = NarwhalConfig.parse("""
        {"model": "m", "engines": [{"iid": "B0", "url": "http://h:1"}],
         "engine_contract": {"vllm_version": "0.11.0", "block_size": 16},
         "recovery": {"engine_restart_policy": "whole_wave"}}
        """);
    assertTrue(wave.recovery().wholeWave());
    assertEquals(16, wave.engineContract().getInteger("block_size"));
  }

  @Test
  void engineContractIsACopy() {
    NarwhalConfig withContract = NarwhalConfig.fromJson(Fleets.minimal()
        .put("engine_contract", new JsonObject().put("dtype", "bfloat16")));
    withContract.engineContract().put("dtype", "float32");
    assertEquals("bfloat16", withContract.engineContract().getString("dtype"));
  }

  @Test
  void integralNumbersWrittenAsDecimalsAreIntegers() {
    NarwhalConfig c = NarwhalConfig.fromJson(Fleets.withSection("serving", "{\"max_attempts\": 2.0}"));
    assertEquals(2, c.serving().maxAttempts());
  }
}
