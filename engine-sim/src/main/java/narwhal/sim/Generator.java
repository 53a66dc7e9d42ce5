package narwhal.sim;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Deterministic stand-in for a model: the output is a pure function of the prompt text, the seed
 * and the temperature, so the same request yields the same text on every engine, aggregated or
 * disaggregated. Tokens are whitespace-separated words; each output token is {@code " word"}.
 */
final class Generator {

  static final int MIN_LENGTH = 4;
  static final int LENGTH_SPREAD = 29;

  private static final String[] VOCAB = {
    "the", "a", "river", "stone", "light", "quiet", "engine", "blue", "north", "signal",
    "window", "harbor", "paper", "morning", "glass", "field", "orbit", "cedar", "lamp", "echo",
    "copper", "narrow", "garden", "thread", "winter", "bridge", "salt", "amber", "meteor", "cloud",
    "ember", "meadow", "pilot", "canyon", "velvet", "marble", "falcon", "tide", "lantern", "forest",
    "silver", "harvest", "compass", "ribbon", "summit", "willow", "anchor", "prairie", "comet", "island",
    "and", "of", "to", "in", "is", "was", "under", "over", "with", "near", "beyond", "across",
    "slowly", "bright", "distant", "gentle"
  };

  private Generator() {
  }

  /** Number of prompt tokens: whitespace-separated words. */
  static int countTokens(String text) {
    String trimmed = text.strip();
    return trimmed.isEmpty() ? 0 : trimmed.split("\\s+").length;
  }

  /** The seed of a generation: FNV-1a over the prompt, mixed with seed and temperature. */
  static long hash(String prompt, long seed, double temperature) {
    long h = 0xcbf29ce484222325L;
    for (byte b : prompt.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    h = mix(h ^ mix(seed));
    return mix(h ^ Double.doubleToLongBits(temperature));
  }

  /** Tokens the model would produce before its natural end: 4..32. */
  static int naturalLength(long hash) {
    return MIN_LENGTH + (int) Math.floorMod(hash, (long) LENGTH_SPREAD);
  }

  /** Output token {@code i} (0-based), with its leading space. */
  static String token(long hash, int i) {
    long h = mix(hash + (i + 1) * 0x9E3779B97F4A7C15L);
    return " " + VOCAB[(int) Math.floorMod(h, (long) VOCAB.length)];
  }

  /**
   * The output of a request: {@code min(maxTokens, natural length)} tokens, or exactly
   * {@code maxTokens} when {@code ignoreEos}.
   */
  static Output generate(String prompt, long seed, double temperature, int maxTokens, boolean ignoreEos) {
    long h = hash(prompt, seed, temperature);
    int natural = naturalLength(h);
    int n = ignoreEos ? maxTokens : Math.min(maxTokens, natural);
    List<String> tokens = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      tokens.add(token(h, i));
    }
    String finish = n < natural || ignoreEos ? "length" : "stop";
    return new Output(tokens, finish);
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  /** Generated tokens and the finish reason ({@code stop} at the natural end, else {@code length}). */
  record Output(List<String> tokens, String finishReason) {
    String text() {
      return String.join("", tokens);
    }
  }
}
