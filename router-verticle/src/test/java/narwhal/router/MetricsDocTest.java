package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/metrics.md lists exactly the {@code narwhal_*} families a live router exports, with their Prometheus types
 * and label names; deploy/prometheus-alerts.yml uses only documented series.
 */
@Timeout(60)
class MetricsDocTest {
  private static final String PAGE = "metrics.md";
  private static final Pattern TYPE = Pattern.compile("^# TYPE (narwhal_[a-z0-9_]+) ([a-z]+)$", Pattern.MULTILINE);
  private static final Pattern SAMPLE = Pattern.compile("^(narwhal_[a-z0-9_]+?)(?:_bucket|_count|_sum)?(?:\\{([^}]*)})? ", Pattern.MULTILINE);
  private static final Pattern LABEL = Pattern.compile("([a-z_]+)=\"");

  @Test
  void everyLiveFamilyIsDocumentedWithItsTypeAndLabels() throws Exception {
    Map<String, String> liveTypes = new TreeMap<>();
    Map<String, Set<String>> liveLabels = new TreeMap<>();
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      assertEquals(200, h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hi")
          .put("max_tokens", 2)).status());
      String text = h.get("/metrics").body();
      Matcher t = TYPE.matcher(text);
      while (t.find()) liveTypes.put(t.group(1), t.group(2));
      Matcher s = SAMPLE.matcher(text);
      while (s.find()) {
        String family = liveTypes.containsKey(s.group(1)) ? s.group(1) : s.group(0).split("[{ ]")[0];
        Set<String> labels = liveLabels.computeIfAbsent(family, f -> new TreeSet<>());
        Matcher l = LABEL.matcher(s.group(2) == null ? "" : s.group(2));
        while (l.find()) if (!l.group(1).equals("le")) labels.add(l.group(1));
      }
    }
    Map<String, Map<String, String>> rows = new TreeMap<>();
    DocPages.rows(PAGE, "series").forEach(r -> rows.put(DocPages.code(r.get("series")).get(0), r));
    assertEquals(liveTypes.keySet(), rows.keySet(), "narwhal_* families of a live /metrics (left) vs rows of docs/" + PAGE);
    liveTypes.forEach((family, type) -> {
      assertEquals(type, rows.get(family).get("type"), family + " type");
      assertEquals(liveLabels.getOrDefault(family, Set.of()), new TreeSet<>(DocPages.code(rows.get(family).get("labels"))),
          family + " labels");
    });
  }

  /** Every admission refusal reason docs/metrics.md lists has its {@code narwhal_rejected_total} series from start. */
  @Test
  void everyDocumentedRejectionReasonExistsAtStart() throws Exception {
    Map<String, String> row = DocPages.rows(PAGE, "series").stream()
        .filter(r -> DocPages.code(r.get("series")).get(0).equals("narwhal_rejected_total")).findFirst().orElseThrow();
    String listed = row.get("meaning").substring(0, row.get("meaning").indexOf(';'));
    List<String> reasons = DocPages.code(listed);
    assertTrue(reasons.size() >= 5, "reasons read from docs/" + PAGE + ": " + reasons);
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      String text = h.get("/metrics").body();
      for (String reason : reasons) {
        assertTrue(Pattern.compile("^narwhal_rejected_total\\{[^}]*reason=\"" + reason + "\"[^}]*} 0\\.0$", Pattern.MULTILINE)
            .matcher(text).find(), "narwhal_rejected_total{reason=\"" + reason + "\"} at zero from start");
      }
    }
  }

  @Test
  void alertsUseOnlyDocumentedSeries() throws Exception {
    String alerts = Files.readString(DocPages.root().resolve("deploy/prometheus-alerts.yml"));
    Set<String> documented = new TreeSet<>();
    DocPages.rows(PAGE, "series").forEach(r -> documented.add(DocPages.code(r.get("series")).get(0)));
    Matcher m = Pattern.compile("narwhal_[a-z0-9_]+").matcher(alerts);
    Set<String> used = new TreeSet<>();
    while (m.find()) used.add(m.group().replaceAll("_bucket$|_count$|_sum$", ""));
    assertTrue(!used.isEmpty() && documented.containsAll(used), "alerts use undocumented series: " + used);
    for (String alert : DocPages.rows(PAGE, "alert").stream().map(r -> DocPages.code(r.get("alert")).get(0)).toList()) {
      assertTrue(alerts.contains("alert: " + alert + "\n"), alert + " is documented but not in deploy/prometheus-alerts.yml");
    }
  }
}
