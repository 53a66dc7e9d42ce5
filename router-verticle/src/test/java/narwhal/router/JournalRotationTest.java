package narwhal.router;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.JournalConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Size-based rotation never splits or loses a row, even with rows appended from many threads at once; "-" is stdout. */
@Timeout(60)
class JournalRotationTest {
  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() throws Exception {
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  @Test
  void concurrentRowsAreEachWrittenWholeInExactlyOneFile(@TempDir Path dir) throws Exception {
    Path path = dir.resolve("journal.jsonl");
    Files.writeString(path, "{\"rid\":\"from-before\"}\n");
    JournalConfig config = new JournalConfig(path.toString(), 4096, 1000);
    Journal journal = Journal.open(vertx, config).await(10, TimeUnit.SECONDS);
    int threads = 8;
    int perThread = 500;
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> writers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread w = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < perThread; i++) {
          // rows of varying length, some with multi-byte characters, so rotation points fall anywhere
          journal.append(new JsonObject().put("rid", thread + "-" + i).put("pad", "ναρβάλ".repeat(i % 37)));
        }
      });
      w.start();
      writers.add(w);
    }
    go.countDown();
    for (Thread w : writers) w.join();
    journal.close().await(30, TimeUnit.SECONDS);

    List<Path> files;
    try (Stream<Path> listing = Files.list(dir)) {
      files = listing.filter(p -> p.getFileName().toString().startsWith("journal.jsonl")).toList();
    }
    assertTrue(files.size() > 10, "rotated many times: " + files.size() + " files");
    Set<String> rids = new HashSet<>();
    int rows = 0;
    for (Path file : files) {
      byte[] bytes = Files.readAllBytes(file);
      assertTrue(bytes.length <= 4096, file + " holds " + bytes.length + " bytes, over journal.max_bytes");
      String text = new String(bytes, StandardCharsets.UTF_8);
      assertTrue(text.isEmpty() || text.endsWith("\n"), file + " ends mid-row");
      for (String line : text.split("\n")) {
        if (line.isEmpty()) continue;
        JsonObject row = new JsonObject(line); // a split row would not parse
        assertTrue(rids.add(row.getString("rid")), "row written twice: " + line);
        rows++;
      }
    }
    assertEquals(threads * perThread + 1, rows);
    assertTrue(rids.contains("from-before"), "the rows already in the file are kept");
    for (int t = 0; t < threads; t++) {
      for (int i = 0; i < perThread; i++) assertTrue(rids.contains(t + "-" + i), "lost row " + t + "-" + i);
    }
  }

  @Test
  void keepsOnlyTheNewestRotatedFiles(@TempDir Path dir) throws Exception {
    Path path = dir.resolve("j.jsonl");
    Journal journal = Journal.open(vertx, new JournalConfig(path.toString(), 1024, 2)).await(10, TimeUnit.SECONDS);
    for (int i = 0; i < 100; i++) journal.append(new JsonObject().put("rid", "r" + i).put("pad", "x".repeat(200)));
    journal.close().await(10, TimeUnit.SECONDS);
    try (Stream<Path> listing = Files.list(dir)) {
      assertEquals(Set.of("j.jsonl", "j.jsonl.1", "j.jsonl.2"),
          Set.copyOf(listing.map(p -> p.getFileName().toString()).toList()));
    }
    List<String> current = Files.readAllLines(path);
    assertEquals("r99", new JsonObject(current.get(current.size() - 1)).getString("rid"), "the newest row is in the current file");
    List<String> previous = Files.readAllLines(dir.resolve("j.jsonl.1"));
    int lastOfPrevious = Integer.parseInt(new JsonObject(previous.get(previous.size() - 1)).getString("rid").substring(1));
    int firstOfCurrent = Integer.parseInt(new JsonObject(current.get(0)).getString("rid").substring(1));
    assertEquals(lastOfPrevious + 1, firstOfCurrent, "path.1 holds the rows just before the current file's");
  }

  @Test
  void aRowLargerThanMaxBytesIsWrittenWholeInAFileOfItsOwn(@TempDir Path dir) throws Exception {
    Path path = dir.resolve("j.jsonl");
    Journal journal = Journal.open(vertx, new JournalConfig(path.toString(), 1024, 5)).await(10, TimeUnit.SECONDS);
    journal.append(new JsonObject().put("rid", "small"));
    journal.append(new JsonObject().put("rid", "big").put("pad", "y".repeat(5000)));
    journal.append(new JsonObject().put("rid", "after"));
    journal.close().await(10, TimeUnit.SECONDS);
    assertEquals("small", new JsonObject(Files.readAllLines(dir.resolve("j.jsonl.2")).get(0)).getString("rid"));
    assertEquals("big", new JsonObject(Files.readAllLines(dir.resolve("j.jsonl.1")).get(0)).getString("rid"));
    assertEquals(List.of("after"), Files.readAllLines(path).stream().map(l -> new JsonObject(l).getString("rid")).toList());
  }

  @Test
  void dashWritesRowsToStandardOutput() throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      Journal journal = Journal.open(vertx, new JournalConfig("-", 1024, 5)).await(10, TimeUnit.SECONDS);
      for (int i = 0; i < 50; i++) journal.append(new JsonObject().put("rid", "out" + i).put("pad", "z".repeat(100)));
      journal.close().await(10, TimeUnit.SECONDS);
    } finally {
      System.setOut(original);
    }
    List<String> lines = captured.toString(StandardCharsets.UTF_8).lines().toList();
    assertEquals(50, lines.size());
    for (int i = 0; i < 50; i++) assertEquals("out" + i, new JsonObject(lines.get(i)).getString("rid"));
    assertFalse(Files.exists(Path.of("-")), "no file named -");
  }

  @Test
  void rowsThatCannotBeWrittenAreDroppedWholeAndCountedExactly() throws Exception {
    Path full = Path.of("/dev/full");
    Journal journal = Journal.open(vertx, new JournalConfig(full.toString(), 0, 5)).await(10, TimeUnit.SECONDS);
    for (int i = 0; i < 25; i++) journal.append(new JsonObject().put("rid", "r" + i).put("pad", "x".repeat(100)));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (journal.droppedRows() < 25 && System.nanoTime() < deadline) Thread.sleep(10);
    assertEquals(25, journal.droppedRows(), "every row that met a full device is counted once");
    journal.close().await(10, TimeUnit.SECONDS);
  }

  @Test
  void aRouterWhoseJournalDiskIsFullServesEveryRequestAndCountsTheRowsLost() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("journal", new JsonObject().put("path", "/dev/full")))) {
      for (int i = 0; i < 10; i++) {
        assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(i % 2 == 0)).status());
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      String series = "narwhal_journal_dropped_rows_total ";
      // ten request rows and the breaker's cluster_start row
      while (System.nanoTime() < deadline && !h.get("/metrics").body().contains(series + "11.0")) Thread.sleep(10);
      assertTrue(h.get("/metrics").body().contains(series + "11.0"), "ten request rows and the start row lost, eleven counted");
    }
  }
}
