package narwhal.bench.report;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.probe.MachineInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What a scenario reports: the layout (what ran where), parameters, tables, target verdicts, raw measurements,
 * charts and notes. Printed as it is filled and written whole to {@code bench-results/<scenario>[-smoke].json}.
 */
public final class BenchReport {
  private final String scenario;
  private final boolean smoke;
  private final Instant started = Instant.now();
  private final JsonObject machine = MachineInfo.describe();
  private final JsonObject parameters = new JsonObject();
  private final JsonObject raw = new JsonObject();
  private final List<String> layout = new ArrayList<>();
  private final List<ResultTable> tables = new ArrayList<>();
  private final List<Verdict> verdicts = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();
  private final List<String> charts = new ArrayList<>();

  public BenchReport(String scenario, boolean smoke) {
    this.scenario = scenario;
    this.smoke = smoke;
  }

  public String scenario() {
    return scenario;
  }

  /** One line of "what ran where". */
  public BenchReport layout(String line) {
    layout.add(line);
    System.out.println("  where: " + line);
    return this;
  }

  public BenchReport parameter(String key, Object value) {
    parameters.put(key, value);
    return this;
  }

  public JsonObject parameters() {
    return parameters;
  }

  /** Raw measurements kept in the JSON result only. */
  public BenchReport raw(String key, Object value) {
    raw.put(key, value);
    return this;
  }

  public BenchReport table(ResultTable table) {
    tables.add(table);
    System.out.println();
    System.out.print(table.render());
    System.out.flush();
    return this;
  }

  public BenchReport verdict(Verdict v) {
    verdicts.add(v);
    return this;
  }

  public BenchReport note(String note) {
    notes.add(note);
    System.out.println("note: " + note);
    return this;
  }

  public BenchReport chart(Path png) {
    if (png != null) charts.add(png.toString());
    return this;
  }

  public List<Verdict> verdicts() {
    return List.copyOf(verdicts);
  }

  public boolean violated() {
    return verdicts.stream().anyMatch(v -> v.status() == Verdict.Status.VIOLATED);
  }

  /** The verdicts as a table, printed last. */
  public ResultTable verdictTable() {
    ResultTable t = new ResultTable("targets (" + scenario + (smoke ? ", smoke: figures are not meaningful" : "") + ")",
        "target", "what", "measured", "threshold", "verdict");
    verdicts.forEach(v -> t.row(v.target(), v.what(), v.measured(), v.threshold(), v.status().name()));
    return t;
  }

  public void printHeader() {
    System.out.println("narwhal bench " + scenario + (smoke ? " --smoke" : "") + " — " + started);
    System.out.println("machine: " + MachineInfo.line(machine));
    System.out.flush();
  }

  public Path write(Path dir) {
    JsonObject json = new JsonObject().put("scenario", scenario).put("smoke", smoke).put("started", started.toString())
        .put("finished", Instant.now().toString()).put("machine", machine.put("load_average_end", MachineInfo.loadAverage()))
        .put("layout", new JsonArray(new ArrayList<>(layout))).put("parameters", parameters)
        .put("tables", new JsonArray(tables.stream().map(ResultTable::toJson).toList()))
        .put("verdicts", new JsonArray(verdicts.stream().map(Verdict::toJson).toList()))
        .put("notes", new JsonArray(new ArrayList<>(notes))).put("charts", new JsonArray(new ArrayList<>(charts)))
        .put("raw", raw);
    Path file = dir.resolve(scenario + (smoke ? "-smoke" : "") + ".json");
    try {
      Files.createDirectories(dir);
      Files.writeString(file, json.encodePrettily());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return file;
  }
}
