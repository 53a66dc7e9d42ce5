package narwhal.bench.scenario;

import io.vertx.core.json.JsonObject;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Why a placement run's figures are what they are, from the router's own journal: for each reason a prefill was
 * placed ({@code prefill_placement}: prefix, spill, load, …) how many requests, how many the producer served from its
 * prefix cache ({@code prefill_cached_tokens}, the engines reporting prompt-token details), and their time to the
 * end of the prefill and to the first output; and which reasons the slowest 1 % of first outputs had. The rows a
 * run wrote are those past the journal's length before it.
 */
final class PlacementBreakdown {
  private final List<Path> journals;
  private final long[] offsets;

  /** @param journals the journal of each replica the runs go through */
  PlacementBreakdown(List<Path> journals) {
    this.journals = List.copyOf(journals);
    this.offsets = new long[journals.size()];
  }

  /** Marks where the next run's rows start. */
  void mark() {
    for (int i = 0; i < offsets.length; i++) offsets[i] = length(journals.get(i));
  }

  /** The request rows written since {@link #mark()}, every replica's. */
  List<JsonObject> rows() {
    List<JsonObject> rows = new ArrayList<>();
    for (int i = 0; i < offsets.length; i++) read(journals.get(i), offsets[i], rows);
    return rows;
  }

  private static void read(Path journal, long offset, List<JsonObject> rows) {
    long end = length(journal);
    if (end <= offset) return;
    try (RandomAccessFile file = new RandomAccessFile(journal.toFile(), "r")) {
      file.seek(offset);
      byte[] bytes = new byte[(int) (end - offset)];
      file.readFully(bytes);
      for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
        if (!line.startsWith("{")) continue;
        JsonObject row = new JsonObject(line);
        if (row.containsKey("rid") && "completed".equals(row.getString("terminal"))) rows.add(row);
      }
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("reading " + journal + ": " + e, e);
    }
  }

  /** Adds one run's rows to {@code table}: a line per prefill reason, then the slowest 1 %'s reasons. */
  static void addRows(ResultTable table, String run, List<JsonObject> rows) {
    Map<String, List<JsonObject>> byReason = new LinkedHashMap<>();
    for (JsonObject row : rows) byReason.computeIfAbsent(String.valueOf(row.getString("prefill_placement")), k -> new ArrayList<>()).add(row);
    for (Map.Entry<String, List<JsonObject>> e : byReason.entrySet()) {
      List<JsonObject> of = e.getValue();
      long hits = of.stream().filter(r -> r.getInteger("prefill_cached_tokens") != null && r.getInteger("prefill_cached_tokens") > 0).count();
      table.row(run, e.getKey(), of.size(), Fmt.percent((double) of.size() / rows.size(), 1), Fmt.percent((double) hits / of.size(), 1),
          ms(of, "ttft_s", 0.5), ms(of, "ttft_s", 0.99), ms(of, "first_byte_s", 0.5), ms(of, "first_byte_s", 0.99));
    }
    List<JsonObject> sorted = new ArrayList<>(rows);
    sorted.sort(Comparator.comparingDouble(r -> -seconds(r, "first_byte_s")));
    List<JsonObject> slowest = sorted.subList(0, Math.max(1, (int) Math.ceil(rows.size() * 0.01)));
    if (rows.isEmpty()) return;
    Map<String, Integer> reasons = new LinkedHashMap<>();
    for (JsonObject r : slowest) {
      String hit = r.getInteger("prefill_cached_tokens") != null && r.getInteger("prefill_cached_tokens") > 0 ? " hit" : " miss";
      reasons.merge(r.getString("prefill_placement") + hit, 1, Integer::sum);
    }
    table.row(run, "slowest 1 %: " + reasons, slowest.size(), "", "", ms(slowest, "ttft_s", 0.5), ms(slowest, "ttft_s", 0.99),
        ms(slowest, "first_byte_s", 0.5), ms(slowest, "first_byte_s", 0.99));
  }

  /**
   * The medians of the rows whose request arrived at {@code from} or later (a run's measured window): time to the first
   * byte sent ({@code first_byte_ms}) and to the end of the prefill ({@code prefill_ms}), and how many rows.
   */
  static JsonObject medians(List<JsonObject> rows, Instant from) {
    List<JsonObject> measured = rows.stream().filter(r -> r.getValue("arrived") instanceof String a && !Instant.parse(a).isBefore(from)).toList();
    return new JsonObject().put("requests", measured.size()).put("first_byte_ms", quantileMs(measured, "first_byte_s", 0.5))
        .put("prefill_ms", quantileMs(measured, "ttft_s", 0.5));
  }

  static ResultTable table() {
    return new ResultTable("how each prefill was placed (the routers' journals): requests, share, producer's prefix-cache hit "
        + "(prefill_cached_tokens > 0), time to the end of the prefill (ttft_s) and to the first output (first_byte_s), ms",
        "run", "prefill placement", "requests", "share", "hit", "prefill p50", "prefill p99", "first byte p50", "first byte p99");
  }

  private static String ms(List<JsonObject> rows, String field, double q) {
    double v = quantileMs(rows, field, q);
    return Double.isNaN(v) ? "—" : Fmt.num(v, 1);
  }

  private static double quantileMs(List<JsonObject> rows, String field, double q) {
    double[] v = rows.stream().mapToDouble(r -> seconds(r, field)).filter(d -> d >= 0).sorted().toArray();
    if (v.length == 0) return Double.NaN;
    return 1000 * v[Math.min(v.length - 1, (int) Math.ceil(q * v.length) - 1)];
  }

  private static double seconds(JsonObject row, String field) {
    return row.getValue(field) instanceof Number n ? n.doubleValue() : -1;
  }

  private static long length(Path journal) {
    try {
      return Files.exists(journal) ? Files.size(journal) : 0;
    } catch (IOException e) {
      return 0;
    }
  }
}
