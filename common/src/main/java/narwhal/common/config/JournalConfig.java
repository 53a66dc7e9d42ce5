package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Where the operations journal (one JSON row per line, docs/operations.md#journal) goes: a file, rotated by size, or standard
 * output ({@code path} {@value #STDOUT}, for containers). A file over {@code max_bytes} is renamed {@code path.1}
 * (older ones shift to {@code .2} … {@code .keep}, the oldest is deleted) before the row that would cross the limit;
 * {@code max_bytes} 0 never rotates. Read at start only.
 */
public record JournalConfig(String path, long maxBytes, int keep) {

  public static final String STDOUT = "-";
  static final Set<String> KEYS = Set.of("path", "max_bytes", "keep");

  public static JournalConfig defaults() {
    return new JournalConfig("journal.jsonl", 268_435_456L, 5);
  }

  static JournalConfig read(SectionReader r) {
    JournalConfig d = defaults();
    long maxBytes = r.wholeNumber("max_bytes", d.maxBytes(), 0, Long.MAX_VALUE,
        "0 (never rotate) or a number of bytes of at least 1024");
    if (maxBytes > 0 && maxBytes < 1024) throw r.invalid("max_bytes", "0 (never rotate) or a number of bytes of at least 1024");
    return new JournalConfig(r.nonEmptyString("path", d.path()), maxBytes, r.integer("keep", d.keep(), 1, 1000));
  }

  public boolean toStdout() {
    return STDOUT.equals(path);
  }

  public JsonObject toJson() {
    return new JsonObject().put("path", path).put("max_bytes", maxBytes).put("keep", keep);
  }
}
