package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.JournalConfig;

import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The request journal (docs/operations.md#journal): one JSON line per finished request. {@link #append} may be called from any
 * event loop: it queues the row to the journal's own writer thread, which encodes and writes it, so neither file I/O
 * nor the encoding runs on an event loop and rows never interleave. The writer drains {@link #BATCH_MS} after the
 * first row of a batch, so it is woken once per batch, not once per row (waking it per row was 3 % of the router's
 * CPU per short request). A row must not be modified once appended. The writer appends whole rows to
 * {@code journal.path} and rotates by size ({@link JournalConfig}): a row goes whole into the file that receives it, so no row is split across files or lost
 * by a rotation; with path {@code "-"} rows go to standard output. {@link #close()} writes and flushes what is queued.
 */
final class Journal {
  private static final Logger LOG = Logger.getLogger(Journal.class.getName());
  /** How long a row may wait for the rows that follow it before the writer takes them all. */
  static final long BATCH_MS = 5;

  private final Vertx vertx;
  private final JournalConfig config;
  private final ScheduledThreadPoolExecutor writer;
  private final ConcurrentLinkedQueue<JsonObject> queued = new ConcurrentLinkedQueue<>();
  /** A drain of {@link #queued} is scheduled and has not started taking rows yet. */
  private final AtomicBoolean draining = new AtomicBoolean();
  /** Touched by the writer thread only. */
  private OutputStream out;
  private long size;

  private Journal(Vertx vertx, JournalConfig config) throws IOException {
    this.vertx = vertx;
    this.config = config;
    this.writer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "narwhal-journal");
      t.setDaemon(true);
      return t;
    });
    if (config.toStdout()) {
      out = System.out;
    } else {
      openFile();
    }
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
      LOG.warning(() -> "journal closed; row not written: " + row.encode());
    }
  }

  /** Writes every queued row, then flushes once. */
  private void drain() {
    draining.set(false);
    for (JsonObject row = queued.poll(); row != null; row = queued.poll()) {
      try {
        write(row.toBuffer().appendByte((byte) '\n').getBytes());
      } catch (RuntimeException unencodable) {
        LOG.log(Level.WARNING, "journal: a row could not be encoded; left out", unencodable);
      }
    }
    try {
      out.flush();
    } catch (IOException e) {
      LOG.log(Level.WARNING, "journal: cannot flush " + config.path(), e);
    }
  }

  /** Writes every queued row, flushes and closes; rows appended afterwards are logged, not written. */
  public Future<Void> close() {
    writer.shutdown();
    return vertx.executeBlocking(() -> {
      if (!writer.awaitTermination(30, TimeUnit.SECONDS)) LOG.warning("journal: rows still queued after 30 s at close");
      if (config.toStdout()) out.flush(); else out.close();
      return null;
    }, false);
  }

  private void write(byte[] line) {
    try {
      if (config.maxBytes() > 0 && size > 0 && size + line.length > config.maxBytes() && !config.toStdout()) {
        try {
          rotate();
        } catch (IOException e) {
          LOG.log(Level.WARNING, "journal: cannot rotate " + config.path() + "; appending to it instead", e);
          openFile();
        }
      }
      out.write(line);
      size += line.length;
    } catch (IOException e) {
      LOG.log(Level.WARNING, "journal: cannot write to " + config.path() + "; row: " + new String(line, StandardCharsets.UTF_8).trim(), e);
    }
  }

  /** {@code path.(keep-1)} → {@code path.keep} … {@code path} → {@code path.1}, then a fresh {@code path}. */
  private void rotate() throws IOException {
    out.close();
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
      out = new BufferedOutputStream(new FileOutputStream(path.toFile(), true), 1 << 16);
      size = Files.size(path);
    } catch (IOException | UncheckedIOException e) {
      throw new IOException("journal.path: cannot open " + path + " for appending: " + e.getMessage(), e);
    }
  }
}
