package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/** Where the operations journal (one JSON event per line, docs/operations.md#journal) is appended. */
public record JournalConfig(String path) {

  static final Set<String> KEYS = Set.of("path");

  public static JournalConfig defaults() {
    return new JournalConfig("journal.jsonl");
  }

  static JournalConfig read(SectionReader r) {
    return new JournalConfig(r.nonEmptyString("path", defaults().path()));
  }

  public JsonObject toJson() {
    return new JsonObject().put("path", path);
  }
}
