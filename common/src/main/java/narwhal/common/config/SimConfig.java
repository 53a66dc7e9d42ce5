package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * Narwhal's own keys, not vLLM's: with {@code embedded} true, {@code demo} and
 * {@code serve} start an in-process simulated engine for every {@code engines[]} entry, on that
 * entry's URL port and with its role, so the router can run without GPUs. The other keys shape
 * those engines as engine-sim's options do: latency model, prefix cache, continuous batching. Read at start.
 */
public record SimConfig(boolean embedded, String latencyProfile, double ttftMs, double ttftPerTokenMs, double itlMs,
    double itlPerRunningMs, boolean prefixCaching, int maxNumSeqs, int maxNumBatchedTokens,
    boolean enablePromptTokensDetails, int numGpuBlocks) {

  /** engine-sim's latency profiles (a launcher test checks the list against engine-sim's), and "" for the zero model. */
  public static final List<String> LATENCY_PROFILES = List.of("", "qwen2.5-0.5b-l4");
  /** vLLM's defaults for {@code --max-num-seqs} and {@code --max-num-batched-tokens}. */
  public static final int DEFAULT_MAX_NUM_SEQS = 256;
  public static final int DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192;
  public static final int DEFAULT_NUM_GPU_BLOCKS = 4096;

  static final Key<SimConfig, Boolean> EMBEDDED = Key.bool("embedded", SimConfig::embedded, false).readAtStart();
  static final Key<SimConfig, String> LATENCY_PROFILE = Key.oneOf("latency_profile", SimConfig::latencyProfile, "",
      LATENCY_PROFILES).readAtStart();
  static final Key<SimConfig, Double> TTFT_MS = latency("ttft_ms", SimConfig::ttftMs);
  static final Key<SimConfig, Double> TTFT_PER_TOKEN_MS = latency("ttft_per_token_ms", SimConfig::ttftPerTokenMs);
  static final Key<SimConfig, Double> ITL_MS = latency("itl_ms", SimConfig::itlMs);
  static final Key<SimConfig, Double> ITL_PER_RUNNING_MS = latency("itl_per_running_ms", SimConfig::itlPerRunningMs);
  static final Key<SimConfig, Boolean> PREFIX_CACHING = Key.bool("prefix_caching", SimConfig::prefixCaching, true)
      .readAtStart();
  static final Key<SimConfig, Integer> MAX_NUM_SEQS = Key.integer("max_num_seqs", SimConfig::maxNumSeqs,
      DEFAULT_MAX_NUM_SEQS, 1, Integer.MAX_VALUE).readAtStart();
  static final Key<SimConfig, Integer> MAX_NUM_BATCHED_TOKENS = Key.integer("max_num_batched_tokens",
      SimConfig::maxNumBatchedTokens, DEFAULT_MAX_NUM_BATCHED_TOKENS, 1, Integer.MAX_VALUE).readAtStart();
  static final Key<SimConfig, Boolean> ENABLE_PROMPT_TOKENS_DETAILS = Key.bool("enable_prompt_tokens_details",
      SimConfig::enablePromptTokensDetails, false).readAtStart();
  static final Key<SimConfig, Integer> NUM_GPU_BLOCKS = Key.integer("num_gpu_blocks", SimConfig::numGpuBlocks,
      DEFAULT_NUM_GPU_BLOCKS, 1, Integer.MAX_VALUE).readAtStart();

  static final Section<SimConfig> SECTION = new Section<>(EMBEDDED, LATENCY_PROFILE, TTFT_MS, TTFT_PER_TOKEN_MS, ITL_MS,
      ITL_PER_RUNNING_MS, PREFIX_CACHING, MAX_NUM_SEQS, MAX_NUM_BATCHED_TOKENS, ENABLE_PROMPT_TOKENS_DETAILS,
      NUM_GPU_BLOCKS);

  /** A latency term in ms; 0 (the default) leaves it to {@code latency_profile}. */
  private static Key<SimConfig, Double> latency(String name, java.util.function.Function<SimConfig, Double> accessor) {
    return Key.number(name, accessor, 0, v -> v >= 0, "a number of at least 0").readAtStart();
  }

  public static SimConfig defaults() {
    return read(SectionReader.empty("sim", SECTION));
  }

  static SimConfig read(SectionReader r) {
    return new SimConfig(r.get(EMBEDDED), r.get(LATENCY_PROFILE), r.get(TTFT_MS), r.get(TTFT_PER_TOKEN_MS),
        r.get(ITL_MS), r.get(ITL_PER_RUNNING_MS), r.get(PREFIX_CACHING), r.get(MAX_NUM_SEQS),
        r.get(MAX_NUM_BATCHED_TOKENS), r.get(ENABLE_PROMPT_TOKENS_DETAILS), r.get(NUM_GPU_BLOCKS));
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
