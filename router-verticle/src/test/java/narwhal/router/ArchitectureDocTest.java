package narwhal.router;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * docs/architecture.md names what exists: its module table lists exactly the reactor's modules, and every path,
 * package and class it names there and in "where to change what" is in the repository ({@code module/.../File.java}
 * stands for a file of that module whose path ends so; {@code *} matches within a name).
 */
class ArchitectureDocTest {
  private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
  private static final Pattern CLASS_NAME = Pattern.compile("[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)*");
  private static final Pattern PACKAGE = Pattern.compile("narwhal(?:\\.[a-z]+)+");
  private static final Pattern QUALIFIED_CLASS = Pattern.compile("(narwhal(?:\\.[a-z]+)+)\\.([A-Z][A-Za-z0-9]*)");

  private static Path root;
  /** Every source file of every module, relative to the root with '/' separators. */
  private static List<String> sources;

  @BeforeAll
  static void read() throws IOException {
    root = DocPages.root();
    try (Stream<Path> all = Files.walk(root)) {
      sources = all.filter(Files::isRegularFile).map(p -> root.relativize(p).toString().replace('\\', '/'))
          .filter(p -> p.matches("[^/]+/src/(main|test)/.*") && !p.contains("/target/")).toList();
    }
  }

  @Test
  void theModuleTableListsTheReactorsModules() throws IOException {
    Set<String> reactor = new TreeSet<>();
    Matcher m = MODULE.matcher(Files.readString(root.resolve("pom.xml")));
    while (m.find()) reactor.add(m.group(1).strip() + "/");
    Set<String> listed = new TreeSet<>();
    for (Map<String, String> row : DocPages.rows("architecture.md", "module")) listed.addAll(DocPages.code(row.get("module")));
    assertEquals(reactor, listed);
  }

  @Test
  void everyNameOfTheTablesExists() {
    List<String> missing = new ArrayList<>();
    for (Map<String, String> row : DocPages.rows("architecture.md", "module")) {
      for (String span : DocPages.code(row.get("what it holds"))) check(span, missing);
    }
    List<Map<String, String>> where = DocPages.rows("architecture.md", "to change…");
    if (where.isEmpty()) missing.add("no \"where to change what\" table");
    for (Map<String, String> row : where) {
      for (String span : DocPages.code(row.get("look at"))) check(span, missing);
    }
    assertEquals(List.of(), missing);
  }

  private static void check(String span, List<String> missing) {
    String name = span.endsWith("()") ? span.substring(0, span.length() - 2) : span;
    boolean found;
    if (name.contains("/.../")) {
      int cut = name.indexOf("/.../");
      String module = name.substring(0, cut);
      String tail = name.substring(cut + 5);
      PathMatcher glob = FileSystems.getDefault().getPathMatcher("glob:" + module + "/src/main/**/" + tail.replaceAll("/$", "") + (tail.endsWith("/") ? "/*" : ""));
      found = sources.stream().anyMatch(p -> glob.matches(Path.of(p)));
    } else if (name.endsWith("/") && !name.contains(" ")) {
      found = Files.isDirectory(root.resolve(name));
    } else if (name.matches("[A-Za-z0-9]+\\.java")) {
      found = sources.stream().anyMatch(p -> p.endsWith("/" + name));
    } else if (QUALIFIED_CLASS.matcher(name).matches()) {
      found = sources.stream().anyMatch(p -> p.endsWith("/" + name.replace('.', '/') + ".java"));
    } else if (PACKAGE.matcher(name).matches()) {
      String dir = "/src/main/java/" + name.replace('.', '/') + "/";
      found = sources.stream().anyMatch(p -> p.contains(dir));
    } else if (CLASS_NAME.matcher(name).matches()) {
      found = sources.stream().anyMatch(p -> p.endsWith("/" + name + ".java"));
    } else {
      return;
    }
    if (!found) missing.add(span);
  }
}
