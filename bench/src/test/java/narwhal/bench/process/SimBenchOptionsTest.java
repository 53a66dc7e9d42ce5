package narwhal.bench.process;

import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** A benchmark fleet's engines keep every load knob on the way to their own JVM (SimProcess writes JSON). */
class SimBenchOptionsTest {

  @Test
  void loadKnobsSurviveTheTripToTheEngineProcess() {
    SimEngineOptions shaped = SimBench.engine("D0", "decode").setLatencyProfile("qwen2.5-0.5b-l4").setPrefixCaching(false)
        .setMaxNumSeqs(64).setMaxNumBatchedTokens(2048).setEnablePromptTokensDetails(true).setItlPerRunningMs(0.3);
    SimEngineOptions read = new SimEngineOptions(shaped.toJson());
    assertEquals(shaped, read);
    assertEquals("qwen2.5-0.5b-l4", read.getLatencyProfile());
    assertFalse(read.isPrefixCaching());
    assertEquals(64, read.getMaxNumSeqs());
  }

  @Test
  void benchEnginesHaveNoBatchLimitByDefault() {
    assertEquals(Integer.MAX_VALUE, SimBench.engine("P0", "prefill").getMaxNumSeqs());
    assertEquals("", SimBench.engine("P0", "prefill").getLatencyProfile(), "benchmarks keep the zero model");
  }
}
