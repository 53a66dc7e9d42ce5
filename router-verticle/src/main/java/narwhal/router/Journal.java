package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.JournalConfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The request journal (docs/operations.md#journal): one JSON line per finished request. {@link #append} may be called from any
 * event loop: it queues the row to the journal's own writer thread, which encodes and writes it, so neither file I/O
 * nor the encoding runs on an event loop and rows never interleave. The writer drains {@link #BATCH_MS} after the
 * first row of a batch, so it is woken once per batch, not once per row (waking it per row was 3 % of the router's
 * CPU per short request), and writes the batch in one go. A row must not be modified once appended. The writer appends
 * whole rows to {@code journal.path} and rotates by size ({@link JournalConfig}): a row goes whole into the file that
 * receives it, so no row is split across files or lost by a rotation; with path {@code "-"} rows go to standard output.
 * A row that cannot be written (a full disk, an I/O error) is dropped whole — a partly written row is cut off the file
 * again — and counted ({@link #droppedRows()}, {@code narwhal_journal_dropped_rows_total}); the first drop, and then
 * at most one line a minute, are logged; writing resumes with the next row that fits. Requests never wait on it.
 * {@link #close()} writes and flushes what is queued.
 */
final class Journal {
  private static final Logger LOG = Logger.getLogger(Journal.class.getName());
  /** How long a row may wait for the rows that follow it before the writer takes them all. */
  static final long BATCH_MS = 5;
  /** Drops and rotation failures are logged at most this often. */
  static final long PROBLEM_LOG_MS = 60_000;

  private final Vertx vertx;
  private final JournalConfig config;
  private final ScheduledThreadPoolExecutor writer;
  private final ConcurrentLinkedQueue<JsonObject> queued = new ConcurrentLinkedQueue<>();
  /** A drain of {@link #queued} is scheduled and has not started taking rows yet. */
  private final AtomicBoolean draining = new AtomicBoolean();
  private final LongAdder dropped = new LongAdder();
  /** Touched by the writer thread only. */
  private FileChannel channel;
  private long size;
  private long droppedSinceLog;
  private long lastProblemLogMs = -PROBLEM_LOG_MS;

  private Journal(Vertx vertx, JournalConfig config) throws IOException {
    this.vertx = vertx;
    this.config = config;
    this.writer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "narwhal-journal");
      t.setDaemon(true);
      return t;
    });
    if (!config.toStdout()) openFile();
  }

  /** Opens (appending to) the journal; fails when the file cannot be opened. */
  public static Future<Journal> open(Vertx vertx, JournalConfig config) {
    return vertx.executeBlocking(() -> new Journal(vertx, config), false);
  }

  public void append(JsonObject row) {
    queued.add(row);
    if (!draining.compareAndSet(false, true)) return;
    try {
      writer.schedule(this::drain, BATCH_MS, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      queued.remove(row);
      draining.set(false);
      tag(row).log(LOG, Level.WARNING, "journal closed; row not written: " + row.encode(), null);
    }
  }

  private static narwhal.common.log.RequestTag tag(JsonObject row) {
    return new narwhal.common.log.RequestTag(row.getValue("rid") instanceof String rid ? rid : null,
        row.getValue("trace_id") instanceof String trace ? trace : null);
  }

  /** Rows that could not be written, counted exactly: a row is written whole or dropped whole. */
  public long droppedRows() {
    return dropped.sum();
  }

  /** Writes every queued row. */
  private void drain() {
    draining.set(false);
    List<byte[]> batch = new ArrayList<>();
    for (JsonObject row = queued.poll(); row != null; row = queued.poll()) {
      try {
        batch.add(row.toBuffer().appendByte((byte) '\n').getBytes());
      } catch (RuntimeException unencodable) {
        tag(row).log(LOG, Level.WARNING, "journal: a row could not be encoded; left out", unencodable);
      }
    }
    if (batch.isEmpty()) return;
    if (config.toStdout()) {
      batch.forEach(System.out::writeBytes);
      System.out.flush();
      return;
    }
    int from = 0;
    while (from < batch.size()) {
      if (rotationDue(batch.get(from), 0)) rotateOrKeepAppending();
      int to = from + 1;
      long bytes = batch.get(from).length;
      while (to < batch.size() && !rotationDue(batch.get(to), bytes)) bytes += batch.get(to++).length;
      writeWhole(batch.subList(from, to), bytes);
      from = to;
    }
  }

  private boolean rotationDue(byte[] line, long pending) {
    return config.maxBytes() > 0 && size + pending > 0 && size + pending + line.length > config.maxBytes();
  }

  /** Writes rows in one go; on a failure, cuts a partly written row off the file again and counts what is lost. */
  private void writeWhole(List<byte[]> rows, long bytes) {
    ByteBuffer buffer = ByteBuffer.allocate((int) bytes);
    rows.forEach(buffer::put);
    buffer.flip();
    long start = size;
    try {
      if (channel == null) openFile();
      while (buffer.hasRemaining()) channel.write(buffer);
      size = start + bytes;
    } catch (IOException e) {
      int written = buffer.position();
      int whole = 0;
      long kept = 0;
      for (byte[] row : rows) {
        if (kept + row.length > written) break;
        kept += row.length;
        whole++;
      }
      try {
        if (channel != null && channel.size() > start + kept) channel.truncate(start + kept);
      } catch (IOException cannotCut) {
        LOG.log(Level.FINE, "journal: cannot cut a partial row", cannotCut);
      }
      size = start + kept;
      problem(rows.size() - whole, "cannot write to " + config.path() + ": " + e.getMessage());
    }
  }

  private void problem(int lostRows, String what) {
    dropped.add(lostRows);
    droppedSinceLog += lostRows;
    long count = droppedSinceLog;
    if (warnAtMost(what + "; " + count + " row(s) dropped since the last such line (narwhal_journal_dropped_rows_total)", null)) {
      droppedSinceLog = 0;
    }
  }

  /** Logs a warning unless one was logged within {@link #PROBLEM_LOG_MS}; whether it did. */
  private boolean warnAtMost(String what, Throwable cause) {
    long now = System.currentTimeMillis();
    if (now - lastProblemLogMs < PROBLEM_LOG_MS) return false;
    lastProblemLogMs = now;
    LOG.log(Level.WARNING, "journal: " + what, cause);
    return true;
  }

  /** Closes the queue, writes what is queued and closes the file. */
  public Future<Void> close() {
    writer.shutdown();
    return vertx.executeBlocking(() -> {
      if (!writer.awaitTermination(30, TimeUnit.SECONDS)) LOG.warning("journal: rows still queued after 30 s at close");
      if (config.toStdout()) System.out.flush();
      else if (channel != null) channel.close();
      return null;
    }, false);
  }

  private void rotateOrKeepAppending() {
    try {
      rotate();
    } catch (IOException e) {
      warnAtMost("cannot rotate " + config.path() + "; appending to it instead", e);
      try {
        openFile();
      } catch (IOException cannotReopen) {
        channel = null;
      }
    }
  }

  /** {@code path.(keep-1)} → {@code path.keep} … {@code path} → {@code path.1}, then a fresh {@code path}. */
  private void rotate() throws IOException {
    if (channel != null) channel.close();
    channel = null;
    size = 0;
    Path path = Path.of(config.path());
    for (int i = config.keep() - 1; i >= 1; i--) {
      Path from = rotated(path, i);
      if (Files.exists(from)) Files.move(from, rotated(path, i + 1), StandardCopyOption.REPLACE_EXISTING);
    }
    Files.move(path, rotated(path, 1), StandardCopyOption.REPLACE_EXISTING);
    openFile();
  }

  private static Path rotated(Path path, int index) {
    return path.resolveSibling(path.getFileName() + "." + index);
  }

  private void openFile() throws IOException {
    Path path = Path.of(config.path());
    try {
      channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
      size = channel.size();
    } catch (IOException | UncheckedIOException e) {
      throw new IOException("journal.path: cannot open " + path + " for appending: " + e.getMessage(), e);
    }
  }
}
