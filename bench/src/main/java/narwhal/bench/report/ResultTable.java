package narwhal.bench.report;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;

/**
 * A titled table of results printed with aligned columns (numbers right-aligned) and written to JSON with
 * the same cells. Cells are strings as shown; {@link Fmt} makes them.
 */
public final class ResultTable {
  private final String title;
  private final List<String> columns;
  private final List<List<String>> rows = new ArrayList<>();

  public ResultTable(String title, String... columns) {
    this.title = title;
    this.columns = List.of(columns);
  }

  public ResultTable row(Object... cells) {
    if (cells.length != columns.size()) {
      throw new IllegalArgumentException("row of " + cells.length + " cells for " + columns.size() + " columns in " + title);
    }
    List<String> row = new ArrayList<>();
    for (Object c : cells) row.add(c == null ? "—" : c.toString());
    rows.add(row);
    return this;
  }

  public String title() {
    return title;
  }

  public int size() {
    return rows.size();
  }

  public String render() {
    int[] width = new int[columns.size()];
    for (int i = 0; i < width.length; i++) {
      width[i] = columns.get(i).length();
      for (List<String> r : rows) width[i] = Math.max(width[i], r.get(i).length());
    }
    StringBuilder out = new StringBuilder(title).append('\n');
    appendRow(out, columns, width, false);
    StringBuilder rule = new StringBuilder();
    for (int i = 0; i < width.length; i++) rule.append(i == 0 ? "" : "  ").append("-".repeat(width[i]));
    out.append(rule).append('\n');
    for (List<String> r : rows) appendRow(out, r, width, true);
    return out.toString();
  }

  /** The table as a GitHub markdown table (for docs). */
  public String markdown() {
    StringBuilder out = new StringBuilder("| ").append(String.join(" | ", columns)).append(" |\n|");
    columns.forEach(c -> out.append("---|"));
    out.append('\n');
    for (List<String> r : rows) out.append("| ").append(String.join(" | ", r)).append(" |\n");
    return out.toString();
  }

  private static void appendRow(StringBuilder out, List<String> cells, int[] width, boolean alignNumbers) {
    StringBuilder line = new StringBuilder();
    for (int i = 0; i < width.length; i++) {
      String c = cells.get(i);
      String pad = " ".repeat(width[i] - c.length());
      if (i > 0) line.append("  ");
      line.append(alignNumbers && numeric(c) ? pad + c : c + pad);
    }
    out.append(line.toString().stripTrailing()).append('\n');
  }

  static boolean numeric(String c) {
    return !c.isEmpty() && (Character.isDigit(c.charAt(0)) || (c.length() > 1 && (c.charAt(0) == '-' || c.charAt(0) == '+')
        && Character.isDigit(c.charAt(1))));
  }

  public JsonObject toJson() {
    JsonArray r = new JsonArray();
    rows.forEach(row -> r.add(new JsonArray(new ArrayList<>(row))));
    return new JsonObject().put("title", title).put("columns", new JsonArray(new ArrayList<>(columns))).put("rows", r);
  }
}
