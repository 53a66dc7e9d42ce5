package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.DoublePredicate;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * One fleet-file key of a section, declared once: its name, its type, its default ({@code null}: required), how its
 * value is read and refused (with the expectation an operator sees), how it is written back, and whether a running
 * replica applies a change ({@link #readAtStart()} when it cannot). Reading ({@link SectionReader#get}), writing
 * ({@link Section#toJson}), the override catalogue ({@link ConfigOverrides}), start-only detection
 * ({@link StartOnlyKeys}) and the docs test of docs/configuration.md all derive from these declarations.
 *
 * @param <R> the section record the key belongs to
 * @param <T> the value's type in that record
 */
public final class Key<R, T> {

  /** The value's type as the fleet file writes it; also how an override text is read. */
  public enum Type {
    STRING("string"), INTEGER("integer"), NUMBER("number"), BOOLEAN("boolean"), STRINGS("array of strings"),
    LIST("list"), OBJECT("object or null"), SECTION("object");

    private final String docName;

    Type(String docName) {
      this.docName = docName;
    }

    /** The name in the type column of docs/configuration.md. */
    public String docName() {
      return docName;
    }
  }

  /** Reads the value of {@code name} from {@code r}, {@code defaultValue} when absent. */
  @FunctionalInterface
  interface Reader<T> {
    T read(SectionReader r, String name, T defaultValue);
  }

  private final String name;
  private final Type type;
  private final T defaultValue;
  private final Reader<T> reader;
  private final Function<R, T> accessor;
  private final Function<T, Object> writer;
  private final Section<?> nested;
  private final boolean startOnly;
  private final String replacement;

  private Key(String name, Type type, T defaultValue, Reader<T> reader, Function<R, T> accessor,
              Function<T, Object> writer, Section<?> nested, boolean startOnly, String replacement) {
    this.name = Objects.requireNonNull(name);
    this.type = type;
    this.defaultValue = defaultValue;
    this.reader = reader;
    this.accessor = accessor;
    this.writer = writer;
    this.nested = nested;
    this.startOnly = startOnly;
    this.replacement = replacement;
  }

  private static <R, T> Key<R, T> of(String name, Type type, Function<R, T> accessor, T defaultValue, Reader<T> reader,
                                     Function<T, Object> writer) {
    return new Key<>(name, type, defaultValue, reader, accessor, writer, null, false, null);
  }

  /** A string passing {@code valid}. */
  static <R> Key<R, String> text(String name, Function<R, String> accessor, String defaultValue,
                                 Predicate<String> valid, String expectation) {
    return of(name, Type.STRING, accessor, defaultValue, (r, n, d) -> r.text(n, d, valid, expectation), v -> v);
  }

  static <R> Key<R, String> string(String name, Function<R, String> accessor, String defaultValue) {
    return text(name, accessor, defaultValue, s -> true, "a string");
  }

  static <R> Key<R, String> nonEmpty(String name, Function<R, String> accessor, String defaultValue) {
    return text(name, accessor, defaultValue, s -> !s.isBlank(), "a non-empty string");
  }

  static <R> Key<R, String> oneOf(String name, Function<R, String> accessor, String defaultValue, List<String> options) {
    return text(name, accessor, defaultValue, options::contains, oneOfExpectation(options));
  }

  /** An enum written by its wire name. */
  static <R, E> Key<R, E> choice(String name, Function<R, E> accessor, E defaultValue, List<E> values,
                                 Function<E, String> wireName) {
    List<String> names = values.stream().map(wireName).toList();
    String expectation = oneOfExpectation(names);
    return of(name, Type.STRING, accessor, defaultValue, (r, n, d) -> {
      String wire = r.text(n, wireName.apply(d), names::contains, expectation);
      return values.get(names.indexOf(wire));
    }, wireName::apply);
  }

  static <R> Key<R, Boolean> bool(String name, Function<R, Boolean> accessor, boolean defaultValue) {
    return of(name, Type.BOOLEAN, accessor, defaultValue, SectionReader::bool, v -> v);
  }

  /** An integer from {@code min} to {@code max} ({@link Integer#MAX_VALUE}: no upper bound). */
  static <R> Key<R, Integer> integer(String name, Function<R, Integer> accessor, int defaultValue, int min, int max) {
    return of(name, Type.INTEGER, accessor, defaultValue, (r, n, d) -> r.integer(n, d, min, max), v -> v);
  }

  /** A whole number (byte sizes) from {@code min} to {@code max}. */
  static <R> Key<R, Long> whole(String name, Function<R, Long> accessor, long defaultValue, long min, long max,
                                String expectation) {
    return of(name, Type.INTEGER, accessor, defaultValue, (r, n, d) -> r.wholeNumber(n, d, min, max, expectation),
        v -> v);
  }

  /** A duration in seconds, written as a whole number when it is one ({@code 600}, not {@code 600.0}). */
  static <R> Key<R, Double> seconds(String name, Function<R, Double> accessor, double defaultValue,
                                    DoublePredicate valid, String expectation) {
    return of(name, Type.NUMBER, accessor, defaultValue, (r, n, d) -> r.number(n, d, valid::test, expectation),
        Seconds::toJson);
  }

  static <R> Key<R, Double> positiveSeconds(String name, Function<R, Double> accessor, double defaultValue) {
    return seconds(name, accessor, defaultValue, v -> v > 0, "a number greater than 0");
  }

  static <R> Key<R, Double> nonNegativeSeconds(String name, Function<R, Double> accessor, double defaultValue) {
    return seconds(name, accessor, defaultValue, v -> v >= 0, "a number of at least 0");
  }

  /** A number that is not a duration, written as the double it is. */
  static <R> Key<R, Double> number(String name, Function<R, Double> accessor, double defaultValue,
                                   DoublePredicate valid, String expectation) {
    return of(name, Type.NUMBER, accessor, defaultValue, (r, n, d) -> r.number(n, d, valid::test, expectation),
        v -> v);
  }

  /** A list of strings read by {@code reader}. */
  static <R> Key<R, List<String>> strings(String name, Function<R, List<String>> accessor, List<String> defaultValue,
                                          Reader<List<String>> reader) {
    return of(name, Type.STRINGS, accessor, defaultValue, reader, v -> new JsonArray(new ArrayList<>(v)));
  }

  /** A nested section ({@code server.cors}, {@code cluster.tls}), read by {@code reader} from its own reader. */
  static <R, S> Key<R, S> section(String name, Function<R, S> accessor, Section<S> section,
                                  Function<SectionReader, S> reader) {
    return new Key<>(name, Type.SECTION, null, (r, n, d) -> reader.apply(r.section(n, section)), accessor,
        v -> section.toJson(v), section, false, null);
  }

  /** A top-level key read and written by its section's own code ({@code engines}, {@code engine_contract}). */
  static <R, T> Key<R, T> custom(String name, Type type, Function<R, T> accessor, Function<T, Object> writer) {
    return of(name, type, accessor, null, (r, n, d) -> {
      throw new IllegalStateException(n + " is read by its section");
    }, writer);
  }

  /** The same key, read only when the process starts (a hot reload reports a change as waiting for a restart). */
  Key<R, T> readAtStart() {
    return new Key<>(name, type, defaultValue, reader, accessor, writer, nested, true, replacement);
  }

  /**
   * The same key, no longer written: a file holding it still loads (its value is checked as before), with a warning
   * that says what to set instead ({@code replacement}).
   */
  Key<R, T> replacedBy(String replacement) {
    return new Key<>(name, type, defaultValue, reader, r -> null, v -> null, nested, startOnly,
        Objects.requireNonNull(replacement));
  }

  public String name() {
    return name;
  }

  public Type type() {
    return type;
  }

  /** The default value as the fleet file writes it; {@code null} for a required key and a section. */
  public Object defaultJson() {
    return defaultValue == null ? null : writer.apply(defaultValue);
  }

  T defaultValue() {
    return defaultValue;
  }

  public boolean startOnly() {
    return startOnly;
  }

  /** Whether the key is only still accepted from older files ({@link #replacedBy}). */
  public boolean retired() {
    return replacement != null;
  }

  /** What to set instead of a retired key. */
  public String replacement() {
    return replacement;
  }

  /** The keys of a nested section, or null. */
  public Section<?> nested() {
    return nested;
  }

  T read(SectionReader r) {
    return reader.read(r, name, defaultValue);
  }

  Object jsonOf(R record) {
    return writer.apply(accessor.apply(record));
  }

  private static String oneOfExpectation(List<String> options) {
    return "one of " + options.stream().map(o -> "\"" + o + "\"").collect(Collectors.joining(", "));
  }
}
