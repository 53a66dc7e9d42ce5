package narwhal.common.fault;

import io.vertx.core.json.JsonObject;

/**
 * A classified failure of one engine leg. Futures on the request path fail with it; everything the
 * router does about a fault (status, retry, breaker evidence, journal) reads {@link #kind()}. Stackless:
 * it is a value on the hot path, not a bug.
 */
public final class EngineFault extends RuntimeException {
  private static final String MODEL_MISSING_PREFIX = "engine answered HTTP 404: ";
  private final FaultKind kind;
  private final Phase phase;
  private final int status;
  private final String errorType;
  private final String param;
  private final Object code;
  /** A handoff the router refused whose descriptor named KV blocks: the producer holds them until its lease. */
  private final boolean kvHeld;
  /** The HTTP status the engine answered with, 0 when the fault is not an engine's error answer. */
  private final int engineStatus;

  public EngineFault(FaultKind kind, Phase phase, String detail) {
    this(kind, phase, kind.defaultStatus(), detail, null);
  }

  public EngineFault(FaultKind kind, Phase phase, int status, String detail, String errorType) {
    this(kind, phase, status, detail, errorType, null, null);
  }

  /** As above, with the {@code param} and {@code code} of the engine's own error object (null: it gave none). */
  public EngineFault(FaultKind kind, Phase phase, int status, String detail, String errorType, String param, Object code) {
    this(kind, phase, status, detail, errorType, param, code, false, 0);
  }

  private EngineFault(FaultKind kind, Phase phase, int status, String detail, String errorType, String param, Object code,
                      boolean kvHeld, int engineStatus) {
    super(detail, null, false, false);
    this.kvHeld = kvHeld;
    this.engineStatus = engineStatus;
    this.kind = kind;
    this.phase = phase;
    this.status = status;
    this.errorType = errorType;
    this.param = param;
    this.code = code;
  }

  /**
   * An engine's HTTP error answer, classified by its status; 4xx answers keep the engine's own status and message
   * (or say the status when the engine gave no message: a detail is never empty).
   */
  public static EngineFault ofStatus(Phase phase, int status, String engineMessage) {
    return ofStatus(phase, status, engineMessage, null);
  }

  /**
   * As above, with the engine's error object ({@code {message, type, param, code}}, nested or vLLM's older flat shape;
   * null when the body had none): a 4xx keeps its {@code type}, {@code param} and {@code code} as the engine sent them.
   */
  public static EngineFault ofStatus(Phase phase, int status, String engineMessage, JsonObject engineError) {
    if (status == 404 && modelMissing(engineMessage)) {
      return new EngineFault(FaultKind.ENGINE_MODEL_MISSING, phase, FaultKind.ENGINE_MODEL_MISSING.defaultStatus(),
          MODEL_MISSING_PREFIX + engineMessage, null, null, null, false, status);
    }
    FaultKind kind = FaultKind.ofEngineStatus(status);
    if (kind == FaultKind.ENGINE_REJECTED && engineError != null && engineError.getValue("type") instanceof String type
        && engineMessage != null && !engineMessage.isBlank()) {
      Object param = engineError.getValue("param");
      return new EngineFault(kind, phase, status, engineMessage, type, param instanceof String p ? p : null,
          engineError.containsKey("code") ? engineError.getValue("code") : null, false, status);
    }
    int clientStatus = kind == FaultKind.ENGINE_REJECTED ? status : kind.defaultStatus();
    boolean silent = engineMessage == null || engineMessage.isBlank();
    String detail = kind == FaultKind.ENGINE_REJECTED && !silent
        ? engineMessage
        : "engine answered HTTP " + status + (silent ? "" : ": " + engineMessage);
    return new EngineFault(kind, phase, clientStatus, detail, kind == FaultKind.ENGINE_REJECTED ? "invalid_request_error" : null,
        null, null, false, status);
  }

  /**
   * vLLM's answer for a model it does not serve: 404 "The model `NAME` does not exist." For the engine's own base model
   * this is the engine's fault; for an adapter or a served alias see {@link #notTheEnginesBaseModel()}.
   */
  private static boolean modelMissing(String message) {
    return message != null && message.startsWith("The model `") && message.endsWith("` does not exist.");
  }

  /**
   * This {@link FaultKind#ENGINE_MODEL_MISSING} fault, for a request that named an adapter (or an alias), not the
   * engine's base model: the engine unloaded it since its listing was read. No evidence against the engine, not
   * retried; the client gets vLLM's own 404 as {@link FaultKind#ENGINE_REJECTED} does.
   */
  public EngineFault notTheEnginesBaseModel() {
    String message = getMessage().startsWith(MODEL_MISSING_PREFIX) ? getMessage().substring(MODEL_MISSING_PREFIX.length()) : getMessage();
    return new EngineFault(FaultKind.ENGINE_REJECTED, phase, 404, message, "NotFoundError", "model", 404);
  }

  /** An {@code {"error": …}} object inside a 200 stream: its own status when it is an HTTP error status. */
  public static EngineFault ofStreamError(Phase phase, JsonObject error) {
    Object code = error.getValue("code");
    int status = code instanceof Number n && n.intValue() >= 400 && n.intValue() <= 599 ? n.intValue() : 500;
    String message = error.getValue("message") instanceof String s ? s : "engine reported an error";
    String type = error.getValue("type") instanceof String s ? s : null;
    String param = error.getValue("param") instanceof String s ? s : null;
    return new EngineFault(FaultKind.STREAM_ERROR_OBJECT, phase, status, message, type, param, null);
  }

  public FaultKind kind() {
    return kind;
  }

  /** This fault, for a refused handoff whose descriptor named KV blocks (they stay held on the producer until its lease). */
  public EngineFault leavingKvHeld() {
    return new EngineFault(kind, phase, status, getMessage(), errorType, param, code, true, engineStatus);
  }

  /** Whether the producer still holds KV blocks this fault's handoff named (left to its lease). */
  public boolean leavesKvHeld() {
    return kvHeld;
  }

  public Phase phase() {
    return phase;
  }

  /** The HTTP status the engine answered with ({@code 503} from an engine that stops), 0 when it sent no error answer. */
  public int engineStatus() {
    return engineStatus;
  }

  /** The HTTP status a client sees for this fault. */
  public int status() {
    return status;
  }

  public String detail() {
    return getMessage();
  }

  /** The error type a client sees: the engine's own for stream error objects and 4xx answers, else the phase. */
  public String errorType() {
    return errorType != null ? errorType : phase.wireName();
  }

  /** The engine's own {@code param} for its 4xx answer or stream error object; null when it named none. */
  public String param() {
    return param;
  }

  /** The engine's own {@code code} for its 4xx answer or stream error object; null when it sent none. */
  public Object code() {
    return code;
  }

  public boolean isTransient() {
    if (kind == FaultKind.STREAM_ERROR_OBJECT) {
      return status == 408 || status == 429 || (status >= 500 && status <= 504);
    }
    return kind.isTransient();
  }

  @Override
  public String toString() {
    return "EngineFault[" + kind + ", " + phase.wireName() + ", " + status + ", " + getMessage() + "]";
  }
}
