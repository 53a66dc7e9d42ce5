package narwhal.common.config;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.logging.Logger;

/**
 * Hot reload of the fleet file (docs/configuration.md): re-reads it every {@code periodMs} with Vert.x's async file system
 * (never on the event loop's time), and when its text changed, parses it whole. A valid file becomes the current
 * configuration and is handed to {@code onApplied(old, new)}; an invalid one is refused whole — the last good
 * configuration stays — and its {@link ConfigException} goes to {@code onRefused}. The start-time overrides
 * ({@link ConfigOverrides}) are applied to every text read, so a reload keeps them.
 */
public final class FleetFileWatcher {
  private static final Logger LOG = Logger.getLogger(FleetFileWatcher.class.getName());

  private final Vertx vertx;
  private final String path;
  private final AtomicReference<NarwhalConfig> current;
  private final BiConsumer<NarwhalConfig, NarwhalConfig> onApplied;
  private final Consumer<ConfigException> onRefused;
  private final ConfigOverrides overrides;
  private String lastText;
  private long timer = -1;
  private boolean reading;

  public FleetFileWatcher(Vertx vertx, String path, AtomicReference<NarwhalConfig> current,
                          BiConsumer<NarwhalConfig, NarwhalConfig> onApplied, Consumer<ConfigException> onRefused) {
    this(vertx, path, ConfigOverrides.none(), current, onApplied, onRefused);
  }

  public FleetFileWatcher(Vertx vertx, String path, ConfigOverrides overrides, AtomicReference<NarwhalConfig> current,
                          BiConsumer<NarwhalConfig, NarwhalConfig> onApplied, Consumer<ConfigException> onRefused) {
    this.overrides = overrides;
    this.vertx = vertx;
    this.path = path;
    this.current = current;
    this.onApplied = onApplied;
    this.onRefused = onRefused;
  }

  /** Remembers the file as it is now, then checks it every {@code periodMs}. */
  public Future<Void> start(long periodMs) {
    return vertx.fileSystem().readFile(path).map(buffer -> {
      lastText = buffer.toString();
      timer = vertx.setPeriodic(periodMs, t -> check());
      return null;
    });
  }

  /** Re-reads the file now, applying it even when its text did not change (the {@code reload-config} command). */
  public Future<Boolean> reloadNow() {
    lastText = null;
    return read();
  }

  public void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
  }

  private void check() {
    if (!reading) read();
  }

  private Future<Boolean> read() {
    reading = true;
    return vertx.fileSystem().readFile(path)
        .map(Buffer::toString)
        .map(this::consider)
        .onFailure(err -> LOG.warning(() -> "fleet file " + path + " unreadable: " + err.getMessage()))
        .eventually(() -> {
          reading = false;
          return Future.succeededFuture();
        });
  }

  private boolean consider(String text) {
    if (text.equals(lastText)) return false;
    lastText = text;
    NarwhalConfig next;
    try {
      next = overrides.parse(text);
    } catch (ConfigException e) {
      LOG.warning(() -> "fleet file " + path + " refused, keeping the last good configuration: " + e.getMessage());
      onRefused.accept(e);
      return false;
    }
    NarwhalConfig previous = current.getAndSet(next);
    LOG.info(() -> "fleet file " + path + " applied");
    onApplied.accept(previous, next);
    return true;
  }
}
