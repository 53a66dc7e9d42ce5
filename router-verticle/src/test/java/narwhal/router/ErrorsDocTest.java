package narwhal.router;

import narwhal.common.fault.FaultKind;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/errors.md has one row per fault of the taxonomy with its status, transient-ness, breaker class, quarantine
 * and journal reason, and one row per error the router's edge builds (status, type, journal reason), and no row for
 * anything the code does not produce.
 */
class ErrorsDocTest {
  private static final String PAGE = "errors.md";
  /** A literal edge error: {@code new EdgeError(414, "invalid_request_error", …, "invalid_request", false)}. */
  private static final Pattern LITERAL = Pattern.compile(
      "new EdgeError\\(\\s*(\\d{3}|status),\\s*\"([a-z_]+)\",.*?\"([a-z_]+)\",\\s*(?:true|false)\\)", Pattern.DOTALL);

  @Test
  void everyFaultKindHasItsRow() {
    Map<String, Map<String, String>> rows = new java.util.TreeMap<>();
    DocPages.rows(PAGE, "fault kind").forEach(r -> rows.put(DocPages.code(r.get("fault kind")).get(0), r));
    Set<String> kinds = new TreeSet<>();
    for (FaultKind kind : FaultKind.values()) kinds.add(kind.name());
    assertEquals(kinds, rows.keySet(), "FaultKind values (left) vs rows of docs/" + PAGE);
    for (FaultKind kind : FaultKind.values()) {
      Map<String, String> row = rows.get(kind.name());
      assertEquals(kind.reason(), first(row, "journal reason"), kind + " journal reason");
      assertEquals(String.valueOf(kind.defaultStatus()), first(row, "status"), kind + " status");
      assertEquals(kind.isTransient() ? "yes" : "no", first(row, "transient"), kind + " transient");
      assertEquals(kind.quarantines() ? "yes" : "no", first(row, "quarantines"), kind + " quarantines");
      String breaker = kind.failureClass() == null ? "—" : "`" + kind.failureClass().wireName() + "`";
      assertEquals(breaker, row.get("breaker class"), kind + " breaker class");
    }
  }

  @Test
  void everyEdgeErrorHasItsRowAndEveryRowIsProduced() throws Exception {
    Set<String> produced = new TreeSet<>();
    for (EdgeError e : factoryErrors()) produced.add(e.status() + " " + e.type() + " " + e.reason());
    Set<String> anyStatus = new TreeSet<>();
    for (String source : routerSources()) {
      Matcher m = LITERAL.matcher(source);
      while (m.find()) {
        if (m.group(1).equals("status")) anyStatus.add(m.group(2) + " " + m.group(3));
        else produced.add(m.group(1) + " " + m.group(2) + " " + m.group(3));
      }
    }
    Set<String> documented = new TreeSet<>();
    for (Map<String, String> row : DocPages.rows(PAGE, "edge reason")) {
      documented.add(first(row, "status") + " " + first(row, "type") + " " + first(row, "edge reason"));
    }
    assertTrue(documented.containsAll(produced), "edge errors without a row: " + minus(produced, documented));
    for (String typeAndReason : anyStatus) {
      assertTrue(documented.stream().anyMatch(d -> d.endsWith(" " + typeAndReason)), "no row for " + typeAndReason);
    }
    Set<String> unknown = new TreeSet<>();
    for (String d : documented) {
      if (!produced.contains(d) && anyStatus.stream().noneMatch(t -> d.endsWith(" " + t))) unknown.add(d);
    }
    assertTrue(unknown.isEmpty(), "rows for edge errors the code does not build: " + unknown);
  }

  /** Every EdgeError the static factories can build, each factory called with sample arguments (booleans both ways). */
  private static List<EdgeError> factoryErrors() throws Exception {
    List<EdgeError> errors = new ArrayList<>();
    for (Method m : EdgeError.class.getDeclaredMethods()) {
      if (!Modifier.isStatic(m.getModifiers()) || m.getReturnType() != EdgeError.class) continue;
      // an engine's own error passed on (ofEngine): its type and reason are the engine fault's, in the fault-kind table
      if (m.getName().equals("ofEngine")) continue;
      for (boolean flag : new boolean[] {false, true}) {
        Object[] args = new Object[m.getParameterCount()];
        Class<?>[] types = m.getParameterTypes();
        for (int i = 0; i < args.length; i++) {
          args[i] = types[i] == boolean.class ? flag : types[i] == long.class ? 1000L : types[i] == int.class ? 1
              : types[i] == narwhal.common.config.TenantConfig.class ? narwhal.common.config.TenantConfig.fallback("t") : "x";
        }
        errors.add((EdgeError) m.invoke(null, args));
      }
    }
    return errors;
  }

  private static List<String> routerSources() throws IOException {
    Path main = DocPages.root().resolve("router-verticle/src/main/java");
    try (Stream<Path> files = Files.walk(main)) {
      List<String> sources = new ArrayList<>();
      for (Path p : files.filter(p -> p.toString().endsWith(".java")).toList()) sources.add(Files.readString(p));
      return sources;
    }
  }

  private static String first(Map<String, String> row, String column) {
    List<String> spans = DocPages.code(row.get(column));
    return spans.isEmpty() ? row.get(column) : spans.get(0);
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.removeAll(b);
    return out;
  }
}
