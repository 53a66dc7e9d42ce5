package narwhal.sim;

/**
 * vLLM's context-length refusals as its renderer words them (v0.18 to v0.30; the simulator reports v0.29): the
 * output limit alone above {@code max_model_len}, or the prompt longer than {@code max_model_len − output limit}.
 * vLLM tokenizes a text prompt only up to one token past that room, so for text it says "at least" and names that
 * many tokens; a prompt of token ids is counted exactly. Each is a 400 {@code BadRequestError} whose message ends
 * with {@code (parameter=…, value=…)} and whose {@code param} names the parameter.
 */
final class ContextLength {
  private ContextLength() {
  }

  /** Throws vLLM's 400 when {@code promptTokens} and {@code outputLimit} (0: none asked) do not fit {@code maxModelLen}. */
  static void check(int maxModelLen, String limitKey, long outputLimit, int promptTokens, boolean exactCount) {
    if (outputLimit > maxModelLen) {
      throw new ApiError(400, limitKey + "=" + outputLimit + " cannot be greater than max_model_len=max_total_tokens="
        + maxModelLen + ". Please request fewer output tokens. (parameter=" + limitKey + ", value=" + outputLimit + ")",
        "BadRequestError", limitKey);
    }
    long room = maxModelLen - outputLimit;
    if (promptTokens <= room) {
      return;
    }
    long counted = exactCount ? promptTokens : room + 1;
    String atLeast = exactCount ? "" : "at least ";
    throw new ApiError(400, "This model's maximum context length is " + maxModelLen + " tokens. However, you requested "
      + outputLimit + " output tokens and your prompt contains " + atLeast + counted + " input tokens, for a total of "
      + atLeast + (counted + outputLimit) + " tokens. Please reduce the length of the input prompt or the number of "
      + "requested output tokens. (parameter=input_tokens, value=" + counted + ")", "BadRequestError", "input_tokens");
  }
}
