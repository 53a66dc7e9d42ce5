package narwhal.router;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Every relative link of README.md, CHANGELOG.md and docs/*.md reaches a file of the repository, and its #anchor a heading. */
class DocLinksTest {
  private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
  private static final Pattern HEADING = Pattern.compile("^#{1,6} (.+)$", Pattern.MULTILINE);

  @Test
  void everyRelativeLinkResolves() throws Exception {
    Path root = DocPages.root();
    List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("CHANGELOG.md")));
    try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).forEach(pages::add);
    }
    List<String> broken = new ArrayList<>();
    for (Path page : pages) {
      Matcher m = LINK.matcher(Files.readString(page));
      while (m.find()) {
        String link = m.group(1);
        if (link.matches("^[a-z]+:.*")) continue;
        String file = link.contains("#") ? link.substring(0, link.indexOf('#')) : link;
        Path target = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        if (!Files.exists(target) || !target.startsWith(root)) {
          broken.add(root.relativize(page) + ": " + link + " (no such file)");
        } else if (link.contains("#") && !anchors(target).contains(link.substring(link.indexOf('#') + 1))) {
          broken.add(root.relativize(page) + ": " + link + " (no such heading)");
        }
      }
    }
    assertEquals(List.of(), broken);
  }

  /** GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens. */
  private static Set<String> anchors(Path markdown) throws Exception {
    Set<String> anchors = new HashSet<>();
    if (!markdown.toString().endsWith(".md")) return anchors;
    Matcher h = HEADING.matcher(Files.readString(markdown));
    while (h.find()) {
      anchors.add(h.group(1).strip().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-'));
    }
    return anchors;
  }
}
