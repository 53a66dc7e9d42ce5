package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Set;

/**
 * Narwhal's own keys, not in the contract: with {@code embedded} true, {@code demo} and
 * {@code serve} start an in-process simulated engine for every {@code engines[]} entry, on that
 * entry's URL port and with its role, so the router can run without GPUs. The other keys shape
 * those engines as engine-sim's options do: latency model, prefix cache, continuous batching.
 */
public record SimConfig(boolean embedded, String latencyProfile, double ttftMs, double ttftPerTokenMs, double itlMs,
    double itlPerRunningMs, boolean prefixCaching, int maxNumSeqs, int maxNumBatchedTokens,
    boolean enablePromptTokensDetails, int numGpuBlocks) {

  static final Set<String> KEYS = Set.of("embedded", "latency_profile", "ttft_ms", "ttft_per_token_ms", "itl_ms",
      "itl_per_running_ms", "prefix_caching", "max_num_seqs", "max_num_batched_tokens", "enable_prompt_tokens_details",
      "num_gpu_blocks");
  /** engine-sim's latency profiles (a launcher test checks the list against engine-sim's), and "" for the zero model. */
  public static final List<String> LATENCY_PROFILES = List.of("", "qwen2.5-0.5b-l4");

  public static SimConfig defaults() {
    return new SimConfig(false, "", 0, 0, 0, 0, true, 256, 8192, false, 4096);
  }

  static SimConfig read(SectionReader r) {
    SimConfig d = defaults();
    return new SimConfig(r.bool("embedded", d.embedded()),
        r.oneOf("latency_profile", d.latencyProfile(), LATENCY_PROFILES),
        r.nonNegative("ttft_ms", d.ttftMs()),
        r.nonNegative("ttft_per_token_ms", d.ttftPerTokenMs()),
        r.nonNegative("itl_ms", d.itlMs()),
        r.nonNegative("itl_per_running_ms", d.itlPerRunningMs()),
        r.bool("prefix_caching", d.prefixCaching()),
        r.integer("max_num_seqs", d.maxNumSeqs(), 1, Integer.MAX_VALUE),
        r.integer("max_num_batched_tokens", d.maxNumBatchedTokens(), 1, Integer.MAX_VALUE),
        r.bool("enable_prompt_tokens_details", d.enablePromptTokensDetails()),
        r.integer("num_gpu_blocks", d.numGpuBlocks(), 1, Integer.MAX_VALUE));
  }

  public JsonObject toJson() {
    return new JsonObject().put("embedded", embedded).put("latency_profile", latencyProfile).put("ttft_ms", ttftMs)
        .put("ttft_per_token_ms", ttftPerTokenMs).put("itl_ms", itlMs).put("itl_per_running_ms", itlPerRunningMs)
        .put("prefix_caching", prefixCaching).put("max_num_seqs", maxNumSeqs).put("max_num_batched_tokens", maxNumBatchedTokens)
        .put("enable_prompt_tokens_details", enablePromptTokensDetails).put("num_gpu_blocks", numGpuBlocks);
  }
}
