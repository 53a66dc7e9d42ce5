package narwhal.router;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Nothing in the repository cites the specification that lives outside it: readers have only the repository, so
 * sources and pages cite docs/ (a recursive grep for either pattern below finds nothing).
 */
class NoOutsideCitationsTest {
  /** Spelled in two pieces so that this file does not match itself. */
  private static final List<String> PATTERNS = List.of("shared/" + "spec", "CONTRACT " + "§");
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

  private static boolean skipped(Path root, Path file) {
    for (Path part : root.relativize(file)) {
      if (SKIPPED_DIRS.contains(part.toString())) return true;
    }
    String name = file.getFileName().toString();
    return name.endsWith(".jar") || name.endsWith(".jsonl") || name.endsWith(".log");
  }
}
