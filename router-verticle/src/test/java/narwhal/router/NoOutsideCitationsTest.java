package narwhal.router;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Nothing in the repository cites what lives outside it: readers have only the repository, so sources and pages
 * cite docs/. Every file must not name the outside specification; main code (every module's src/main, Java and
 * resources) and the pages (README.md, CHANGELOG.md, docs/) must not cite an outside quality document, "the
 * contract", "ours" for our own keys, the user's document, or a benchmark target id that docs/benchmarks.md's
 * Targets table does not define.
 */
class NoOutsideCitationsTest {
  /** Spelled in two pieces so that this file does not match itself. */
  private static final List<String> PATTERNS = List.of("shared/" + "spec", "CONTRACT " + "§");
  /** Spelled in pieces for the same reason; case-insensitive. */
  private static final List<Pattern> MAIN_PATTERNS = List.of(
      Pattern.compile("QUALITY" + "\\.md", Pattern.CASE_INSENSITIVE),
      Pattern.compile("\\bthe " + "contract\\b|\\bcontract" + "'s\\b", Pattern.CASE_INSENSITIVE),
      Pattern.compile("\\b" + "ours" + "\\b", Pattern.CASE_INSENSITIVE),
      Pattern.compile("\\bthe user" + "'s document", Pattern.CASE_INSENSITIVE));
  /** A target id: P or R and a number from 1 (P0 and D0 are the fixtures' engines, not targets). */
  private static final Pattern TARGET_ID = Pattern.compile("\\b[PR]([1-9][0-9]?)\\b");
  private static final Pattern TARGET_ROW = Pattern.compile("^\\| ([PR][1-9][0-9]?) \\|", Pattern.MULTILINE);
  private static final Set<String> SKIPPED_DIRS = Set.of(".git", "target", "node_modules", "bench-results", ".idea");

  @Test
  void noSourceOrPageCitesTheOutsideSpecification() throws IOException {
    Path root = DocPages.root();
    List<String> hits = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path file : files.filter(p -> Files.isRegularFile(p) && !skipped(root, p)).toList()) {
        String text;
        try {
          text = Files.readString(file);
        } catch (MalformedInputException binary) {
          continue;
        }
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
          for (String pattern : PATTERNS) {
            if (lines[i].contains(pattern)) hits.add(root.relativize(file) + ":" + (i + 1) + ": " + lines[i].strip());
          }
        }
      }
    }
    assertEquals(List.of(), hits);
  }

  @Test
  void mainCodeAndPagesCiteOnlyWhatTheRepositoryHas() throws IOException {
    Path root = DocPages.root();
    Set<String> targets = definedTargets(root);
    List<Path> files = new ArrayList<>();
    for (String page : List.of("README.md", "CHANGELOG.md")) files.add(root.resolve(page));
    try (Stream<Path> all = Files.walk(root)) {
      all.filter(p -> Files.isRegularFile(p) && !skipped(root, p)).filter(p -> {
        String rel = root.relativize(p).toString().replace('\\', '/');
        return rel.startsWith("docs/") || rel.matches("[^/]+/src/main/.*");
      }).forEach(files::add);
    }
    List<String> hits = new ArrayList<>();
    for (Path file : files) {
      String text;
      try {
        text = Files.readString(file);
      } catch (MalformedInputException binary) {
        continue;
      }
      String[] lines = text.split("\n", -1);
      for (int i = 0; i < lines.length; i++) {
        String where = root.relativize(file) + ":" + (i + 1) + ": ";
        for (Pattern pattern : MAIN_PATTERNS) {
          if (pattern.matcher(lines[i]).find()) hits.add(where + lines[i].strip());
        }
        Matcher id = TARGET_ID.matcher(lines[i]);
        while (id.find()) {
          if (!targets.contains(id.group())) hits.add(where + "target " + id.group() + " not defined in docs/benchmarks.md");
        }
      }
    }
    assertEquals(List.of(), hits);
  }

  @Test
  void benchmarksPageDefinesTheTargets() throws IOException {
    assertEquals(new TreeSet<>(List.of("P1", "P2", "P3", "P4", "P5", "P6", "P10", "P11", "P12", "P13", "R2", "R3", "R4", "R5", "R8", "R9", "R10", "R11", "R12", "R13")),
        definedTargets(DocPages.root()));
  }

  /** The ids of docs/benchmarks.md's Targets table: rows that start with {@code | P1 |}. */
  private static Set<String> definedTargets(Path root) throws IOException {
    Set<String> ids = new TreeSet<>();
    Matcher row = TARGET_ROW.matcher(Files.readString(root.resolve("docs/benchmarks.md")));
    while (row.find()) ids.add(row.group(1));
    return ids;
  }

  private static boolean skipped(Path root, Path file) {
    for (Path part : root.relativize(file)) {
      if (SKIPPED_DIRS.contains(part.toString())) return true;
    }
    String name = file.getFileName().toString();
    return name.endsWith(".jar") || name.endsWith(".jsonl") || name.endsWith(".log");
  }
}
