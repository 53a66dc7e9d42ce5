package narwhal.engines.checks;

import io.netty.channel.ConnectTimeoutException;
import io.vertx.core.http.HttpClosedException;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.FaultKind;

import java.net.ConnectException;
import java.util.concurrent.TimeoutException;

/**
 * A failed engine check: which step failed ({@code health}, {@code models}, {@code attestation}, {@code contract},
 * {@code generation}, {@code prefill}, {@code decode}) and why, in words an operator can act on: the engine's status
 * and its own message, or what went wrong on the way. The reason is never empty and never names a host or port.
 */
public final class CheckFailure extends RuntimeException {
  private final String step;
  private final String reason;

  public CheckFailure(String step, String reason) {
    super(step + ": " + reason, null, false, false);
    this.step = step;
    this.reason = reason == null || reason.isBlank() ? "failed without a reason" : reason;
  }

  /** Wraps any failure of {@code step}, bounded by {@code boundMs}, into a check failure that says why. */
  static CheckFailure of(String step, Throwable err, long boundMs) {
    if (err instanceof CheckFailure failure) return failure;
    return new CheckFailure(step, reason(err, boundMs));
  }

  /** "decode: engine answered HTTP 401: Unauthorized": the failed step and why; any other failure, why. */
  public static String describe(Throwable err) {
    return err instanceof CheckFailure failure ? failure.step() + ": " + failure.reason() : reason(err, 0);
  }

  /** Why a check failed, without the step. */
  public static String reasonOf(Throwable err) {
    return reason(err, 0);
  }

  public String step() {
    return step;
  }

  public String reason() {
    return reason;
  }

  /** Why {@code err} happened, without engine addresses; {@code boundMs} is the bound a timeout ran out of. */
  static String reason(Throwable err, long boundMs) {
    if (err instanceof CheckFailure failure) return failure.reason();
    if (err instanceof EngineFault fault) {
      boolean rejected = fault.kind() == FaultKind.ENGINE_REJECTED && !fault.detail().startsWith("engine answered HTTP");
      return rejected ? "engine answered HTTP " + fault.status() + ": " + fault.detail() : fault.detail();
    }
    for (Throwable t = err; t != null; t = t.getCause()) {
      if (t instanceof ConnectTimeoutException) return "could not connect in time";
      if (t instanceof ConnectException) return "could not connect (connection refused)";
      if (t instanceof HttpClosedException) return "the engine closed the connection before a complete answer";
      if (t instanceof TimeoutException || t.getClass().getSimpleName().contains("Timeout")) {
        return boundMs > 0 ? "no complete answer within " + seconds(boundMs) + "s" : "timed out";
      }
    }
    String message = err.getMessage();
    return message == null || message.isBlank() ? err.getClass().getSimpleName() : message;
  }

  static String seconds(long millis) {
    if (millis % 1000 == 0) return Long.toString(millis / 1000);
    String s = Double.toString(millis / 1000.0);
    return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
  }
}
