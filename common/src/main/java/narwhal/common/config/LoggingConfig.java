package narwhal.common.config;

import io.vertx.core.json.JsonObject;

import java.util.List;

/**
 * How the replica writes its log: {@code format} {@code "text"} (one line per record, a stack trace on the lines
 * after it) or {@code "json"} (one JSON object per line, the stack trace in a field: what a log pipeline parses
 * without multi-line rules). Read at start (docs/operations.md#logs).
 */
public record LoggingConfig(Format format) {

  /** The log's line format. */
  public enum Format {
    TEXT("text"), JSON("json");

    private final String wireName;

    Format(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }
  }

  static final Key<LoggingConfig, Format> FORMAT = Key.choice("format", LoggingConfig::format, Format.TEXT,
      List.of(Format.values()), Format::wireName).readAtStart();
  static final Section<LoggingConfig> SECTION = new Section<>(FORMAT);

  public static LoggingConfig defaults() {
    return read(SectionReader.empty("logging", SECTION));
  }

  static LoggingConfig read(SectionReader r) {
    return new LoggingConfig(r.get(FORMAT));
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
