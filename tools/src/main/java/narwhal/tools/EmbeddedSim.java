package narwhal.tools;

import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.SimConfig;
import narwhal.sim.SimEngineOptions;

/** The options of the simulated engine {@code sim.embedded} starts for one {@code engines[]} entry: its identity, and the {@code sim.*} knobs. */
final class EmbeddedSim {
  private EmbeddedSim() {
  }

  static SimEngineOptions options(NarwhalConfig config, EngineConfig engine) {
    SimConfig sim = config.sim();
    return new SimEngineOptions().setName(engine.iid()).setRole(engine.role().wireName()).setModel(engine.model())
        .setHost(engine.host()).setPort(engine.port())
        .setLatencyProfile(sim.latencyProfile()).setTtftBaseMs(sim.ttftMs()).setTtftPerPromptTokenMs(sim.ttftPerTokenMs())
        .setItlMs(sim.itlMs()).setItlPerRunningMs(sim.itlPerRunningMs()).setPrefixCaching(sim.prefixCaching())
        .setMaxNumSeqs(sim.maxNumSeqs()).setMaxNumBatchedTokens(sim.maxNumBatchedTokens())
        .setEnablePromptTokensDetails(sim.enablePromptTokensDetails()).setTotalBlocks(sim.numGpuBlocks());
  }
}
