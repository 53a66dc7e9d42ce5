package narwhal.common.fault;

/**
 * The one fault taxonomy (docs/errors.md): every way a leg can fail, and for each the client status,
 * whether a fresh attempt may cure it, the breaker class it counts against (null: no evidence against the
 * engine), whether it quarantines the engine, and the reason written to the journal and to metrics.
 */
public enum FaultKind {
  CONNECT_ERROR(502, true, FailureClass.CONNECTION, true, "connect_error"),
  CONNECT_TIMEOUT(504, true, FailureClass.TIMEOUT, true, "connect_timeout"),
  POOL_TIMEOUT(504, true, null, false, "pool_timeout"),
  /** The router itself ran out of a resource (file descriptors): no evidence against the engine. */
  LOCAL_RESOURCES(503, true, null, false, "local_resources"),
  CONNECTION_RESET(502, true, FailureClass.CONNECTION, true, "connection_reset"),
  PREFILL_TIMEOUT(504, true, FailureClass.TIMEOUT, true, "prefill_timeout"),
  ENGINE_TIMEOUT_STATUS(504, true, FailureClass.TIMEOUT, true, "engine_timeout_status"),
  ENGINE_OVERLOADED(502, true, FailureClass.OVERLOAD, true, "engine_overloaded"),
  ENGINE_ERROR_STATUS(502, true, FailureClass.INFERENCE_STATUS, true, "engine_error_status"),
  ENGINE_OTHER_STATUS(502, false, FailureClass.INFERENCE_STATUS, true, "engine_error_status"),
  ENGINE_REJECTED(400, false, null, false, "engine_rejected"),
  /** A 404 saying the model does not exist, for the model the fleet serves: the engine's fault, not the client's. */
  ENGINE_MODEL_MISSING(502, true, FailureClass.MODEL, false, "engine_model_missing"),
  BAD_RESPONSE(502, false, FailureClass.INFERENCE_STATUS, true, "bad_response"),
  RESPONSE_TOO_LARGE(502, false, FailureClass.INFERENCE_STATUS, true, "response_too_large"),
  /**
   * The answer of a request an engine runs whole ({@code /tokenize} of a huge prompt, …) is larger than the router
   * reads: what the client asked for, not the engine's fault, so no evidence against it and not retried.
   */
  ANSWER_TOO_LARGE(502, false, null, false, "response_too_large"),
  INVALID_DESCRIPTOR(502, false, FailureClass.KV_HANDOFF, true, "invalid_descriptor"),
  HANDOFF_EXPIRED(504, true, null, false, "handoff_expired"),
  FIRST_TOKEN_TIMEOUT(504, true, FailureClass.STREAM, true, "first_token_timeout"),
  DECODE_SILENCE(504, true, FailureClass.STREAM, true, "decode_read_timeout"),
  DONE_BEFORE_OUTPUT(502, true, FailureClass.STREAM, true, "done_before_output"),
  EOF_BEFORE_DONE(502, true, FailureClass.STREAM, true, "eof_before_done"),
  STREAM_ERROR_OBJECT(500, true, FailureClass.INFERENCE_STATUS, true, "stream_error");

  private final int defaultStatus;
  private final boolean transientFault;
  private final FailureClass failureClass;
  private final boolean quarantines;
  private final String reason;

  FaultKind(int defaultStatus, boolean transientFault, FailureClass failureClass, boolean quarantines, String reason) {
    this.defaultStatus = defaultStatus;
    this.transientFault = transientFault;
    this.failureClass = failureClass;
    this.quarantines = quarantines;
    this.reason = reason;
  }

  public int defaultStatus() {
    return defaultStatus;
  }

  /** Whether a fresh attempt may cure it, provided no output reached the client. */
  public boolean isTransient() {
    return transientFault;
  }

  /** The breaker class this fault counts against, or null when it is no evidence against the engine. */
  public FailureClass failureClass() {
    return failureClass;
  }

  public boolean quarantines() {
    return quarantines;
  }

  public String reason() {
    return reason;
  }

  /** Classifies an engine's HTTP error status (docs/errors.md). */
  public static FaultKind ofEngineStatus(int status) {
    if (status == 408 || status == 504) return ENGINE_TIMEOUT_STATUS;
    if (status == 429 || status == 503) return ENGINE_OVERLOADED;
    if (status == 500 || status == 502) return ENGINE_ERROR_STATUS;
    if (status >= 400 && status < 500) return ENGINE_REJECTED;
    return ENGINE_OTHER_STATUS;
  }
}
