package narwhal.bench.scenario;

import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.load.Bodies;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LatencyHistogram;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.load.PhasedLoad;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.process.RouterProcess;
import narwhal.bench.process.SimBench;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;
import narwhal.bench.report.Verdict;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * R11, the journal's disk full. One replica writes its journal to a small tmpfs of its own (mounted by the phase,
 * which needs root; without it the phase says so and measures nothing) under steady non-streaming load. Then a
 * filler file takes every byte left, and later is deleted. Checked: no request fails, the latency stays, every
 * request row is either in the journal or counted in {@code narwhal_journal_dropped_rows_total}, and rows are
 * written again once there is space.
 */
final class ChaosFullDiskPhase implements ChaosScenario.Phase {
  /** Large enough that the journal does not fill it itself during the run (about 0.5 KiB a row); the filler does. */
  private static final int TMPFS_MIB = 64;
  static final String SPACE = "space";
  static final String FULL = "disk full";
  static final String AGAIN = "space again";
  static final String METRIC = "narwhal_journal_dropped_rows_total";

  @Override
  public String name() {
    return "full-disk";
  }

  @Override
  public void run(BenchEnv env, ChaosScenario.Scope scope) throws Exception {
    boolean smoke = env.smoke();
    int clients = smoke ? 4 : 16;
    double stepS = smoke ? 2 : 8;
    BenchReport report = env.report();
    Path mount = env.tmp().resolve("full-disk");
    Files.createDirectories(mount);
    String mounted = run("mount", "-t", "tmpfs", "-o", "size=" + TMPFS_MIB + "m", "tmpfs", mount.toString());
    if (mounted != null) {
      report.verdict(Verdict.info("R11", "journal on a full disk", "not measured: cannot mount a tmpfs here (" + mounted + ")"));
      return;
    }
    scope.own((AutoCloseable) () -> run("umount", "-l", mount.toString()));
    Path journal = mount.resolve("journal.jsonl");
    SimBench fleet = scope.own(SimBench.start(SimBench.twoPairs(engine -> engine.setItlMs(5))));
    LoadGenerator load = scope.own(new LoadGenerator());
    env.progress().say("full-disk: starting a replica with its journal on a " + TMPFS_MIB + " MiB tmpfs");
    // rotation stays at its default: a full disk must not break it either
    RouterProcess router = scope.own(RouterProcess.start(env, "full-disk", SimBench.unbalanced(fleet.fleetFile(journal, 0)),
        RouterProcess.Options.serving("--preflight=warn")));
    report.layout("full-disk (R11): one replica, journal.path on a " + TMPFS_MIB + " MiB tmpfs of its own; " + clients
        + " non-streaming clients (8 tokens, 5 ms apart), back to back; " + stepS + " s with space, " + stepS
        + " s with a filler file taking every byte left, " + stepS + " s after the filler is deleted");

    HttpWork client = new HttpWork(load.vertx(), load.client(clients + 4), "127.0.0.1", router.port());
    PhasedLoad traffic = new PhasedLoad(client, List.of(new PhasedLoad.Mode("json", false, Bodies.completion(8, false).toBuffer())),
        clients, 30_000, "warm-up");
    traffic.start();
    JvmProbe.sleep((long) (stepS * 500));
    traffic.phase(SPACE);
    JvmProbe.sleep((long) (stepS * 1000));
    env.progress().say("full-disk: filling the tmpfs");
    Path filler = mount.resolve("filler");
    long filled = fill(filler);
    traffic.phase(FULL);
    JvmProbe.sleep((long) (stepS * 1000));
    double droppedWhileFull = dropped(client);
    long rowsWhileFull = requestRows(mount);
    Files.delete(filler);
    traffic.phase(AGAIN);
    JvmProbe.sleep((long) (stepS * 1000));
    traffic.stop();
    JvmProbe.sleep(500);
    double dropped = dropped(client);
    long rows = requestRows(mount);
    long requests = traffic.requests("");
    long failed = traffic.failed("");

    ResultTable table = new ResultTable("full-disk (R11): what the clients saw, by phase; latency ms", "phase", "requests", "failed",
        "p50", "p99", "max");
    traffic.phases().forEach((phase, byMode) -> byMode.forEach((mode, t) -> {
      LatencyHistogram h = t.stats.latency();
      table.row(phase, t.stats.completed(), t.failed(), Fmt.pct(h, 50), Fmt.pct(h, 99), Fmt.ms(h.max()));
    }));
    report.table(table);
    ResultTable journalTable = new ResultTable("full-disk (R11): the journal", "what", "rows");
    journalTable.row("requests the clients made", requests);
    journalTable.row("request rows in the journal files at the end", rows);
    journalTable.row(METRIC + " at the end", Fmt.num(dropped, 0));
    journalTable.row("rows written / dropped when the filler was deleted", rowsWhileFull + " / " + Fmt.num(droppedWhileFull, 0));
    journalTable.row("filler bytes", filled);
    report.table(journalTable);

    Map<String, PhasedLoad.Tally> space = traffic.phases().get(SPACE);
    Map<String, PhasedLoad.Tally> full = traffic.phases().get(FULL);
    LatencyHistogram before = space.get("json").stats.latency();
    LatencyHistogram during = full.get("json").stats.latency();
    report.verdict(Verdict.check("R11", "full disk under the journal: failed requests", failed + " of " + requests, "0", failed == 0));
    report.verdict(Verdict.check("R11", "every request row written or counted dropped (rows + " + METRIC + " = requests)",
        rows + " + " + Fmt.num(dropped, 0) + " = " + Fmt.num(rows + dropped, 0) + " (requests " + requests + ")", "= requests",
        rows + (long) dropped == requests));
    report.verdict(Verdict.check("R11", "the filler, not the journal's own growth, filled the disk", filled + " filler bytes", "> 0",
        filled > 0));
    report.verdict(Verdict.check("R11", "rows dropped while the disk was full", Fmt.num(droppedWhileFull, 0), "> 0 (the disk did fill)",
        droppedWhileFull > 0));
    report.verdict(Verdict.check("R11", "rows written again once there is space", (rows - rowsWhileFull) + " more rows", "> 0",
        rows > rowsWhileFull));
    report.verdict(Verdict.info("R11", "p99 with space / with the disk full", Fmt.pct(before, 99) + " / " + Fmt.pct(during, 99) + " ms"));
    report.raw("full_disk", new JsonObject().put("requests", requests).put("rows", rows).put("dropped", dropped)
        .put("rows_while_full", rowsWhileFull).put("dropped_while_full", droppedWhileFull).put("filler_bytes", filled));
  }

  /** Writes {@code file} until the filesystem has no byte left; returns the bytes written. */
  private static long fill(Path file) throws IOException {
    byte[] chunk = new byte[16 * 1024];
    long written = 0;
    try (OutputStream out = Files.newOutputStream(file)) {
      while (true) {
        out.write(chunk);
        written += chunk.length;
      }
    } catch (IOException full) {
      // no space left: the point
    }
    // what is left after the last whole chunk, a byte at a time
    try (OutputStream out = Files.newOutputStream(file, java.nio.file.StandardOpenOption.APPEND)) {
      while (true) {
        out.write(0);
        out.flush();
        written++;
      }
    } catch (IOException full) {
      return written;
    }
  }

  /** Request rows (with a {@code terminal}) in every journal file under {@code dir}, rotated ones included. */
  private static long requestRows(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      long n = 0;
      for (Path f : files.filter(p -> p.getFileName().toString().startsWith("journal.jsonl")).toList()) {
        for (String line : new String(Files.readAllBytes(f), StandardCharsets.UTF_8).split("\n")) {
          if (line.contains("\"terminal\"")) n++;
        }
      }
      return n;
    }
  }

  private static double dropped(HttpWork client) {
    String metrics = client.getBlocking("/metrics", 5_000).body().toString();
    for (String line : metrics.split("\n")) {
      if (line.startsWith(METRIC + " ") || line.startsWith(METRIC + "{")) return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
    }
    return -1;
  }

  /** Runs a command; null when it succeeded, else what it printed. */
  private static String run(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor() == 0 ? null : (out.isEmpty() ? "exit " + p.exitValue() : out);
    } catch (IOException e) {
      return e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }
}
