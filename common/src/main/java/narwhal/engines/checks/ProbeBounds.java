package narwhal.engines.checks;

import narwhal.common.config.NarwhalConfig;

/** Time bounds of a KV transfer probe's two legs: the prefill, the decode's first token, the decode's silences. */
public record ProbeBounds(long prefillMs, long firstTokenMs, long readMs) {

  /** Preflight: a prefill as patient as a client's ({@code serving.prefill_timeout_s}), a decode as a client's. */
  public static ProbeBounds preflight(NarwhalConfig cfg) {
    return new ProbeBounds(cfg.serving().prefillTimeoutMs(), cfg.engine().firstTokenTimeoutMs(), cfg.engine().decodeReadTimeoutMs());
  }

  /** The breaker's inference probe (docs/operations.md#breaker-states): each leg bounded by {@code engine.first_token_timeout_s}. */
  public static ProbeBounds inference(NarwhalConfig cfg) {
    long bound = cfg.engine().firstTokenTimeoutMs();
    return new ProbeBounds(bound, bound, bound);
  }
}
