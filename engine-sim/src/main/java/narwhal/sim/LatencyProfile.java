package narwhal.sim;

import java.util.Map;
import java.util.TreeMap;

/**
 * Latency models fitted to published vLLM measurements of a named model on a named GPU: the step time at one
 * running sequence, its growth per running sequence, and the prefill cost per prompt token. docs/simulator.md
 * names the source of each and how the numbers were fitted.
 */
record LatencyProfile(String name, double ttftBaseMs, double ttftPerPromptTokenMs, double itlMs, double itlPerRunningMs,
                      String source) {

  private static final Map<String, LatencyProfile> PROFILES = new TreeMap<>(Map.of(
    "qwen2.5-0.5b-l4", new LatencyProfile("qwen2.5-0.5b-l4", 0, 0.086, 5.0, 0.064,
      "vLLM v0.23.0, Qwen/Qwen2.5-0.5B-Instruct BF16 on 1x NVIDIA L4, 256-token prompts, 128-token outputs, "
        + "concurrency 1-32 (https://ai.wmx.dev/benchmarks)")));

  static LatencyProfile named(String name) {
    return PROFILES.get(name);
  }

  static java.util.Set<String> nameSet() {
    return java.util.Collections.unmodifiableSet(PROFILES.keySet());
  }

  static String names() {
    return String.join(", ", PROFILES.keySet());
  }
}
