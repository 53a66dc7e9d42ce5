package narwhal.sim;

/**
 * The prefix-cache keys of a prompt, as vLLM's {@code hash_block_tokens} makes them: the prompt's tokens (the
 * simulator's whitespace tokenizer, ids as {@code prompt_token_ids} reports them) cut into {@code block_size}
 * blocks, each full block keyed by a hash of its parent block's hash and its own token ids. Equal keys therefore
 * mean an equal prefix up to and including that block.
 */
final class PromptBlocks {

  private static final long ROOT = 0x6e61727768616cL;

  private PromptBlocks() {
  }

  /** One chained hash per full block of the prompt. */
  static long[] hashes(String prompt, int blockSize) {
    String trimmed = prompt.strip();
    if (trimmed.isEmpty()) {
      return new long[0];
    }
    String[] words = trimmed.split("\\s+");
    long[] out = new long[words.length / blockSize];
    long parent = ROOT;
    for (int b = 0; b < out.length; b++) {
      long h = mix(parent);
      for (int i = b * blockSize; i < (b + 1) * blockSize; i++) {
        h = mix(h ^ Answer.tokenId(words[i]) ^ ((long) (i - b * blockSize) << 40));
      }
      out[b] = h;
      parent = h;
    }
    return out;
  }

  /**
   * Full blocks a request may take from the cache: vLLM always computes at least the prompt's last token, so a
   * prompt that is an exact multiple of the block size cannot hit its last block.
   */
  static int maxHits(int promptTokens, int blockSize) {
    return Math.max(0, (promptTokens - 1) / blockSize);
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }
}
