package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/**
 * Where the operations journal (one JSON row per line, docs/operations.md#journal) goes: a file, rotated by size, or standard
 * output ({@code path} {@value #STDOUT}, for containers). A file over {@code max_bytes} is renamed {@code path.1}
 * (older ones shift to {@code .2} … {@code .keep}, the oldest is deleted) before the row that would cross the limit;
 * {@code max_bytes} 0 never rotates. Read at start only.
 */
public record JournalConfig(String path, long maxBytes, int keep) {

  public static final String STDOUT = "-";
  public static final String DEFAULT_PATH = "journal.jsonl";
  public static final long DEFAULT_MAX_BYTES = 256L * 1024 * 1024;
  public static final int DEFAULT_KEEP = 5;
  private static final String MAX_BYTES_EXPECTATION = "0 (never rotate) or a number of bytes of at least 1024";

  static final Key<JournalConfig, String> PATH = Key.nonEmpty("path", JournalConfig::path, DEFAULT_PATH).readAtStart();
  /** 0 or at least 1024: the gap is checked in {@link #read}. */
  static final Key<JournalConfig, Long> MAX_BYTES = Key.whole("max_bytes", JournalConfig::maxBytes, DEFAULT_MAX_BYTES,
      0, Long.MAX_VALUE, MAX_BYTES_EXPECTATION).readAtStart();
  static final Key<JournalConfig, Integer> KEEP = Key.integer("keep", JournalConfig::keep, DEFAULT_KEEP, 1, 1000)
      .readAtStart();
  static final Section<JournalConfig> SECTION = new Section<>(PATH, MAX_BYTES, KEEP);

  public static JournalConfig defaults() {
    return read(SectionReader.empty("journal", SECTION));
  }

  static JournalConfig read(SectionReader r) {
    long maxBytes = r.get(MAX_BYTES);
    if (maxBytes > 0 && maxBytes < 1024) throw r.invalid(MAX_BYTES.name(), MAX_BYTES_EXPECTATION);
    return new JournalConfig(r.get(PATH), maxBytes, r.get(KEEP));
  }

  public boolean toStdout() {
    return STDOUT.equals(path);
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
