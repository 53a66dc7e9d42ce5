package narwhal.common.config;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hot reload tells the truth (docs/configuration.md#hot-reload): a file still being written is waited for, not refused;
 * a settled invalid file is refused once; a file that cannot be read is reported once per spell, not every period.
 */
@Timeout(60)
class FleetFileWatcherTest {
  private static final long PERIOD_MS = 200;
  private final Vertx vertx = Vertx.vertx();
  private final AtomicInteger applied = new AtomicInteger();
  private final AtomicInteger refused = new AtomicInteger();
  private final AtomicInteger unreadable = new AtomicInteger();
  @TempDir
  Path dir;

  @AfterEach
  void close() throws Exception {
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  private static String fleet(int maxAttempts) {
    return new JsonObject().put("model", "m").put("engines", new JsonArray().add(new JsonObject().put("iid", "B0")
        .put("url", "http://127.0.0.1:9"))).put("serving", new JsonObject().put("max_attempts", maxAttempts)).encodePrettily();
  }

  private Path watch() throws Exception {
    Path file = dir.resolve("fleet.json");
    Files.writeString(file, fleet(1));
    AtomicReference<NarwhalConfig> current = new AtomicReference<>(NarwhalConfig.parse(fleet(1)));
    FleetFileWatcher watcher = new FleetFileWatcher(vertx, file.toString(), current, (a, b) -> applied.incrementAndGet(),
        e -> refused.incrementAndGet()).onUnreadable(why -> unreadable.incrementAndGet());
    watcher.start(PERIOD_MS).await(10, TimeUnit.SECONDS);
    return file;
  }

  @Test
  void anEditorsTruncateThenWriteIsWaitedForAndASettledInvalidFileIsRefusedOnce() throws Exception {
    Path file = watch();
    Files.writeString(file, "");
    Thread.sleep(PERIOD_MS / 4);
    Files.writeString(file, fleet(2));
    await(() -> applied.get() == 1);
    assertEquals(0, refused.get(), "the empty file between truncate and write was never judged");

    Files.writeString(file, "{\"model\": ");
    await(() -> refused.get() == 1);
    Thread.sleep(PERIOD_MS * 3);
    assertEquals(1, refused.get(), "the same invalid text is refused once, not every period");
    assertEquals(1, applied.get());
  }

  @Test
  void aDeletedFileIsReportedOncePerSpell() throws Exception {
    Path file = watch();
    Files.delete(file);
    await(() -> unreadable.get() == 1);
    Thread.sleep(PERIOD_MS * 4);
    assertEquals(1, unreadable.get(), "one report while it stays missing");
    Files.writeString(file, fleet(3));
    await(() -> applied.get() == 1);
    Files.delete(file);
    await(() -> unreadable.get() == 2);
    assertEquals(0, refused.get());
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "condition not reached");
      Thread.sleep(10);
    }
  }
}
