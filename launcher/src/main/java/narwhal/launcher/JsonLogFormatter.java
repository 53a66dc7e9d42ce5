package narwhal.launcher;

import io.vertx.core.json.JsonObject;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * {@code logging.format: "json"} (docs/operations.md#logs): one JSON object per line — {@code ts} (ISO-8601 UTC),
 * {@code level}, {@code logger}, {@code thread}, {@code message}, {@code request_id} and {@code trace_id} when the
 * record is about a request ({@link narwhal.common.log.RequestTag}), and {@code stack} (the whole stack trace as one
 * string) when the record carries a throwable — so a log pipeline reads each record whole, without multi-line rules.
 */
final class JsonLogFormatter extends Formatter {

  @Override
  public String format(LogRecord record) {
    JsonObject line = new JsonObject().put("ts", Instant.ofEpochMilli(record.getMillis()).toString())
        .put("level", record.getLevel().getName()).put("logger", record.getLoggerName())
        .put("thread", Thread.currentThread().getName()).put("message", formatMessage(record));
    narwhal.common.log.RequestTag request = narwhal.common.log.RequestTag.of(record);
    if (request != null) {
      if (request.requestId() != null) line.put("request_id", request.requestId());
      if (request.traceId() != null) line.put("trace_id", request.traceId());
    }
    if (record.getThrown() != null) {
      StringWriter trace = new StringWriter();
      record.getThrown().printStackTrace(new PrintWriter(trace));
      line.put("stack", trace.toString());
    }
    return line.encode() + System.lineSeparator();
  }

  /** Puts this formatter on every handler of the root logger (the console handler of conf/logging.properties). */
  static void install() {
    for (Handler handler : Logger.getLogger("").getHandlers()) handler.setFormatter(new JsonLogFormatter());
  }
}
