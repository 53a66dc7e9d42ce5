package narwhal.tools;

import narwhal.launcher.CommandFailure;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.SimConfig;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The simulator's load knobs reach the engines from {@code narwhal sim} flags and from {@code sim.*} fleet keys. */
class SimKnobsTest {

  @Test
  void simFlagsBecomeEngineOptions() {
    SimCommand command = new SimCommand();
    new CommandLine(command).parseArgs("--engines", "2", "--latency-profile", "qwen2.5-0.5b-l4", "--no-prefix-caching",
        "--max-num-seqs", "8", "--max-num-batched-tokens", "512", "--enable-prompt-tokens-details", "--num-gpu-blocks", "100",
        "--itl-per-running-ms", "0.5", "--ttft-per-token-ms", "0.2");
    List<SimEngineOptions> options = command.engineOptions();
    assertEquals(2, options.size());
    SimEngineOptions o = options.get(1);
    assertEquals("qwen2.5-0.5b-l4", o.getLatencyProfile());
    assertFalse(o.isPrefixCaching());
    assertEquals(8, o.getMaxNumSeqs());
    assertEquals(512, o.getMaxNumBatchedTokens());
    assertTrue(o.isEnablePromptTokensDetails());
    assertEquals(100, o.getTotalBlocks());
    assertEquals(0.5, o.getItlPerRunningMs());
    assertEquals(0.2, o.getTtftPerPromptTokenMs());

    SimCommand defaults = new SimCommand();
    new CommandLine(defaults).parseArgs();
    SimEngineOptions d = defaults.engineOptions().get(0);
    assertEquals(new SimEngineOptions().setName("sim0").setPort(8100).setEngineId(d.getEngineId()), d,
        "without flags an engine runs vLLM's defaults and the zero latency model");
  }

  @Test
  void aBadFlagValueIsRefusedNamingIt() {
    SimCommand command = new SimCommand();
    new CommandLine(command).parseArgs("--latency-profile", "fast-gpu");
    CommandFailure e = assertThrows(CommandFailure.class, command::engineOptions);
    assertTrue(e.getMessage().contains("latencyProfile=fast-gpu") && e.getMessage().contains("qwen2.5-0.5b-l4"), e.getMessage());
  }

  @Test
  void fleetKeysShapeTheEmbeddedEngines() {
    JsonObject fleet = new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "D0").put("url", "http://127.0.0.1:8103").put("role", "decode")))
        .put("sim", new JsonObject().put("embedded", true).put("latency_profile", "qwen2.5-0.5b-l4").put("itl_ms", 2)
            .put("prefix_caching", false).put("max_num_seqs", 4).put("max_num_batched_tokens", 1024)
            .put("enable_prompt_tokens_details", true).put("num_gpu_blocks", 64));
    NarwhalConfig config = NarwhalConfig.fromJson(fleet);
    SimEngineOptions o = EmbeddedSim.options(config, config.engines().get(0));
    assertEquals("D0", o.getName());
    assertEquals("decode", o.getRole());
    assertEquals(8103, o.getPort());
    assertEquals("qwen2.5-0.5b-l4", o.getLatencyProfile());
    assertEquals(2.0, o.getItlMs());
    assertFalse(o.isPrefixCaching());
    assertEquals(4, o.getMaxNumSeqs());
    assertEquals(1024, o.getMaxNumBatchedTokens());
    assertTrue(o.isEnablePromptTokensDetails());
    assertEquals(64, o.getTotalBlocks());

    SimEngineOptions plain = EmbeddedSim.options(NarwhalConfig.fromJson(fleet.copy().put("sim", new JsonObject().put("embedded", true))),
        config.engines().get(0));
    SimEngineOptions expected = new SimEngineOptions().setName("D0").setRole("decode").setModel("m").setPort(8103)
        .setEngineId(plain.getEngineId());
    assertEquals(expected, plain, "sim.* defaults are engine-sim's defaults");
  }

  @Test
  void badFleetKeysAreRefusedNamingKeyAndExpectation() {
    JsonObject fleet = new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "D0").put("url", "http://127.0.0.1:8103")));
    ConfigException profile = assertThrows(ConfigException.class,
        () -> NarwhalConfig.fromJson(fleet.copy().put("sim", new JsonObject().put("latency_profile", "h100"))));
    assertTrue(profile.getMessage().contains("sim.latency_profile") && profile.getMessage().contains("qwen2.5-0.5b-l4"),
        profile.getMessage());
    ConfigException seqs = assertThrows(ConfigException.class,
        () -> NarwhalConfig.fromJson(fleet.copy().put("sim", new JsonObject().put("max_num_seqs", 0))));
    assertTrue(seqs.getMessage().contains("sim.max_num_seqs"), seqs.getMessage());
  }

  @Test
  void theFleetFileKnowsEngineSimsProfiles() {
    Set<String> listed = new TreeSet<>(SimConfig.LATENCY_PROFILES);
    listed.remove("");
    assertEquals(new TreeSet<>(SimEngineOptions.latencyProfiles()), listed);
  }

  @Test
  void anEmbeddedEngineStartsWithTheKnobs() {
    Vertx vertx = Vertx.vertx();
    try {
      JsonObject fleet = new JsonObject().put("model", "m")
          .put("engines", new JsonArray().add(new JsonObject().put("iid", "B0").put("url", "http://127.0.0.1:8103")))
          .put("sim", new JsonObject().put("max_num_seqs", 3).put("prefix_caching", false));
      NarwhalConfig config = NarwhalConfig.fromJson(fleet);
      SimEngine engine = SimEngine.start(vertx, EmbeddedSim.options(config, config.engines().get(0)).setPort(0)).await();
      assertEquals(3, engine.options().getMaxNumSeqs());
      assertFalse(engine.options().isPrefixCaching());
    } finally {
      vertx.close().await();
    }
  }
}
