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
 * configuration stays — and its {@link ConfigException} goes to {@code onRefused}. A text that does not parse is
 * judged only once it has settled (the same text read again one period later): an editor's truncate-then-write or a
 * copy still under way is waited for, not refused. A file that cannot be read is reported once when it becomes
 * unreadable ({@code onUnreadable}) and once when it is readable again, not every period. The start-time overrides
 * ({@link ConfigOverrides}) are applied to every text read, so a reload keeps them.
 *
 * <p>Not vertx-config's {@code ConfigRetriever}: it compares parsed JSON and reports a file that fails to read or
 * parse as a scan error on every period, so the settle rule, the one-time unreadable report, the line-and-column
 * message of {@link JsonText} and a refusal judged on the whole text would all have to be rebuilt around it.
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
  /** A text that did not parse, seen once: refused if it is still the text at the next read. */
  private String unsettled;
  private boolean unreadable;
  private Consumer<String> onUnreadable = why -> { };
  private java.util.function.BinaryOperator<NarwhalConfig> staging = (previous, next) -> next;
  private java.util.function.Function<NarwhalConfig, Future<Void>> verifying = next -> Future.succeededFuture();
  private java.util.function.UnaryOperator<NarwhalConfig> combining = java.util.function.UnaryOperator.identity();
  /** The configuration the file itself holds (before {@link #combining}): the one started with, then each applied. */
  private NarwhalConfig fileConfig;
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
    this.fileConfig = current.get();
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
    unsettled = null;
    return read(true);
  }

  /** What to run when the file becomes unreadable (missing, no permission): once per such spell, with why. */
  public FleetFileWatcher onUnreadable(Consumer<String> handler) {
    this.onUnreadable = handler;
    return this;
  }

  /**
   * What a valid text becomes before it is applied: {@code staging(previous, parsed)} returns the configuration to
   * apply now (the make-before-break of re-pointed engines keeps their old address until the new one passes its checks).
   */
  public FleetFileWatcher staging(java.util.function.BinaryOperator<NarwhalConfig> staging) {
    this.staging = staging;
    return this;
  }

  /**
   * What a parsed text must also pass before it is applied, beyond the file itself: {@code verifying(parsed)} fails with
   * a {@link ConfigException} for a configuration a fresh start would refuse (a secret file or variable it names is
   * missing), and the text is refused as an invalid one is.
   */
  public FleetFileWatcher verifying(java.util.function.Function<NarwhalConfig, Future<Void>> verifying) {
    this.verifying = verifying;
    return this;
  }

  /**
   * What the file's configuration is combined with before it is checked and applied: engines from discovery join the
   * file's ({@code combining(parsed)} returns the configuration with them).
   */
  public FleetFileWatcher combining(java.util.function.UnaryOperator<NarwhalConfig> combining) {
    this.combining = combining;
    return this;
  }

  /**
   * Applies the file's last good configuration again, combined afresh ({@link #combining}: discovery's engines
   * changed), through the same staging and announcement as a changed file; from any thread.
   */
  public void recombine() {
    synchronized (current) {
      apply(lastText, fileConfig, false);
    }
  }

  public void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
  }

  private void check() {
    if (!reading) read(false);
  }

  private Future<Boolean> read(boolean now) {
    reading = true;
    return vertx.fileSystem().readFile(path)
        .map(Buffer::toString)
        .map(text -> {
          if (unreadable) {
            unreadable = false;
            LOG.info(() -> "fleet file " + path + " is readable again");
          }
          return text;
        })
        .compose(text -> consider(text, now))
        .onFailure(err -> {
          if (unreadable) return;
          unreadable = true;
          LOG.warning(() -> "fleet file " + path + " unreadable (the last good configuration keeps running; said once): "
              + err.getMessage());
          onUnreadable.accept(err.getMessage());
        })
        .eventually(() -> {
          reading = false;
          return Future.succeededFuture();
        });
  }

  private Future<Boolean> consider(String text, boolean now) {
    if (text.equals(lastText)) return Future.succeededFuture(false);
    NarwhalConfig parsed;
    try {
      parsed = overrides.parse(text);
    } catch (ConfigException e) {
      if (!now && !text.equals(unsettled)) {
        unsettled = text;
        return Future.succeededFuture(false);
      }
      refuse(text, e);
      return Future.succeededFuture(false);
    }
    unsettled = null;
    return verifying.apply(parsed).transform(ar -> {
      if (ar.failed()) {
        ConfigException e = ar.cause() instanceof ConfigException c ? c
            : new ConfigException("", "the fleet file could not be checked: " + ar.cause().getMessage());
        refuse(text, e);
        return Future.succeededFuture(false);
      }
      apply(text, parsed, true);
      return Future.succeededFuture(true);
    });
  }

  private void refuse(String text, ConfigException e) {
    unsettled = null;
    lastText = text;
    LOG.warning(() -> "fleet file " + path + " refused, keeping the last good configuration: " + e.getMessage());
    onRefused.accept(e);
  }

  private void apply(String text, NarwhalConfig parsed, boolean fromFile) {
    NarwhalConfig previous;
    NarwhalConfig next;
    // one lock for the file's configuration and the combined one: a recombination never applies a file superseded meanwhile
    synchronized (current) {
      lastText = text;
      fileConfig = parsed;
      previous = current.get();
      next = staging.apply(previous, combining.apply(parsed));
      current.set(next);
    }
    if (fromFile) LOG.info(() -> "fleet file " + path + " applied");
    onApplied.accept(previous, next);
  }
}
