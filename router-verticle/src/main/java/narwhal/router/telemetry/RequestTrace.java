package narwhal.router.telemetry;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.Phase;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.connector.PrefillResult;

import java.util.Map;
import java.util.function.Function;

/**
 * What a request's lifecycle tells its trace, step by step (docs/operations.md#tracing): the attempts, each placement,
 * the prefill leg and its descriptor validation, the decode leg and its first token, the relay, the end. {@link #OFF}
 * (tracing off, or a request refused before its lifecycle) does nothing and adds no listener to any future; a
 * recording trace is confined to the request's event loop, like its lifecycle, and ignores what comes after its end.
 */
public abstract class RequestTrace {
  public static final RequestTrace OFF = new RequestTrace() { };

  /**
   * What the request span is opened with; {@code operation} is its {@code gen_ai.operation.name} ({@code chat},
   * {@code text_completion}, {@code embeddings}, …); {@code method} is the client's HTTP method ({@code http.request.method}).
   */
  public record Start(String operation, String model, String rid, String clientRid, String method, String endpoint,
                      boolean stream, long arrivedNanos, Object maxTokens) {
    /** A {@code POST} request's start, as every inference endpoint's. */
    public Start(String operation, String model, String rid, String clientRid, String endpoint, boolean stream,
                 long arrivedNanos, Object maxTokens) {
      this(operation, model, rid, clientRid, "POST", endpoint, stream, arrivedNanos, maxTokens);
    }
  }

  RequestTrace() {
  }

  /** The trace id engines and the journal see, or null when off. */
  public String traceId() {
    return null;
  }

  /** The tenant the request counts as, and its priority class. */
  public void tenant(String name, String priorityClass) {
  }

  /** Attempt {@code number} starts (a previous one has ended). */
  public void attempt(int number) {
  }

  /** A placement for {@code phase}: {@code reservation} completes with the engine's iid, or fails. */
  public <T> Future<T> placement(Phase phase, Future<T> reservation, Function<T, String> iid) {
    return reservation;
  }

  /** Runs the prefill leg on {@code engine} with the trace-context headers it must send. */
  public Future<PrefillResult> prefill(String engine, String requestId, Function<Map<String, String>, Future<PrefillResult>> leg) {
    return leg.apply(Map.of());
  }

  /** The decode leg is dispatched to {@code engine}; returns the headers it must send. */
  public Map<String, String> decode(String engine, String requestId, boolean sameWorker, long handoffAgeNanos) {
    return Map.of();
  }

  /** The leg of a request an engine runs whole is dispatched to {@code engine}; returns the headers it must send. */
  public Map<String, String> whole(String engine, String requestId) {
    return Map.of();
  }

  /** The decode leg's end (or a whole leg's): {@code end} completes at its {@code [DONE]} (its answer's end) or fails. */
  public Future<DecodeEnd> decodeEnd(Future<DecodeEnd> end) {
    return end;
  }

  /** The decode's first output reached the router at {@code nanoTime}: the relay to the client starts. */
  public void firstOutput(long nanoTime) {
  }

  /** The attempt failed with {@code fault}; {@code retryReason} says whether another follows. */
  public void attemptFailed(EngineFault fault, String retryReason) {
  }

  /** The attempt ended without an engine fault: no engine could be placed, or its retry was not allowed to run. */
  public void attemptEnded(String reason) {
  }

  /** The request completed: the engine's usage (or null) and last finish reason. */
  public void completed(JsonObject usage, String finishReason, long outputChars) {
  }

  /** The request's end: every open span ends now. */
  public void finished(String terminal, String reason, int status, String errorType, int attempts) {
  }
}
