package narwhal.common.log;

import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The request a log record is about (docs/operations.md#logs): carried as the record's parameter, so JSON logs write
 * its {@code request_id} and {@code trace_id} as fields of their own, and text logs print the message as before.
 *
 * @param requestId the router's request id ({@code rid} in the journal)
 * @param traceId the W3C trace id, null when the request is not traced
 */
public record RequestTag(String requestId, String traceId) {

  /** Logs {@code message} about this request at {@code level}, with {@code thrown} when not null. */
  public void log(Logger logger, Level level, String message, Throwable thrown) {
    if (!logger.isLoggable(level)) return;
    LogRecord record = new LogRecord(level, message);
    record.setLoggerName(logger.getName());
    record.setParameters(new Object[] {this});
    record.setThrown(thrown);
    logger.log(record);
  }

  /** The tag among {@code record}'s parameters, or null. */
  public static RequestTag of(LogRecord record) {
    Object[] parameters = record.getParameters();
    if (parameters == null) return null;
    for (Object p : parameters) if (p instanceof RequestTag tag) return tag;
    return null;
  }
}
