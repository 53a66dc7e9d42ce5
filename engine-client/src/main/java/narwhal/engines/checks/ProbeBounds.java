package narwhal.engines.checks;

import narwhal.common.config.NarwhalConfig;

/**
 * Time bounds of a KV transfer probe's two legs (the prefill, the decode's first token, the decode's silences) and how
 * many tokens its decode streams: one for a reachability check, several to reproduce a fault in the middle of a stream.
 */
public record ProbeBounds(long prefillMs, long firstTokenMs, long readMs, int tokens) {
  /** Tokens of a probe that must exercise a stream, as the faults of class {@code stream} break one. */
  public static final int STREAM_TOKENS = 16;

  public ProbeBounds(long prefillMs, long firstTokenMs, long readMs) {
    this(prefillMs, firstTokenMs, readMs, 1);
  }

  /** Preflight: a prefill as patient as a client's ({@code serving.prefill_timeout_s}), a decode as a client's. */
  public static ProbeBounds preflight(NarwhalConfig cfg) {
    return new ProbeBounds(cfg.serving().prefillTimeoutMs(), cfg.engine().firstTokenTimeoutMs(), cfg.engine().decodeReadTimeoutMs());
  }

  /** The breaker's inference probe (docs/operations.md#breaker-states): each leg bounded by {@code engine.first_token_timeout_s}. */
  public static ProbeBounds inference(NarwhalConfig cfg) {
    long bound = cfg.engine().firstTokenTimeoutMs();
    return new ProbeBounds(bound, bound, bound);
  }

  /**
   * The inference probe of an engine held or ejected for a stream fault: {@value #STREAM_TOKENS} streamed tokens, the
   * silences between them bounded as a client's ({@code engine.decode_read_timeout_s}).
   */
  public static ProbeBounds streamed(NarwhalConfig cfg) {
    long bound = cfg.engine().firstTokenTimeoutMs();
    return new ProbeBounds(bound, bound, cfg.engine().decodeReadTimeoutMs(), STREAM_TOKENS);
  }
}
