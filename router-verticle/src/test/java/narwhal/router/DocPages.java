package narwhal.router;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the repository's operator pages ({@code docs/*.md}) for the tests that keep them true to the code: the
 * rows of every Markdown table whose header starts with a given column name, and the text in backticks of a cell.
 */
final class DocPages {
  private static final Pattern CODE = Pattern.compile("`([^`]*)`");

  private DocPages() {
  }

  /** The repository root: tests run in a module directory one level below it. */
  static Path root() {
    Path here = Path.of("").toAbsolutePath();
    return Files.isDirectory(here.resolve("docs")) ? here : here.getParent();
  }

  static String read(String page) {
    try {
      return Files.readString(root().resolve("docs").resolve(page));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every body row of every table of {@code page} whose header's first cell is {@code firstColumn}, as header → cell. */
  static List<Map<String, String>> rows(String page, String firstColumn) {
    List<Map<String, String>> rows = new ArrayList<>();
    List<String> header = null;
    for (String line : read(page).split("\n")) {
      if (!line.startsWith("|")) {
        header = null;
        continue;
      }
      List<String> cells = cells(line);
      if (header == null) {
        header = cells.get(0).equals(firstColumn) ? cells : List.of();
      } else if (!header.isEmpty() && !cells.get(0).matches("-+")) {
        Map<String, String> row = new java.util.LinkedHashMap<>();
        for (int i = 0; i < header.size() && i < cells.size(); i++) row.put(header.get(i), cells.get(i));
        rows.add(row);
      }
    }
    return rows;
  }

  /** The texts in backticks of a cell, in order. */
  static List<String> code(String cell) {
    List<String> spans = new ArrayList<>();
    Matcher m = CODE.matcher(cell == null ? "" : cell);
    while (m.find()) spans.add(m.group(1));
    return spans;
  }

  private static List<String> cells(String line) {
    String inner = line.strip();
    inner = inner.substring(1, inner.endsWith("|") ? inner.length() - 1 : inner.length());
    return Arrays.stream(inner.split("(?<!\\\\)\\|", -1)).map(String::strip).toList();
  }
}
