package narwhal.common.auth;

import narwhal.common.config.SecretRef;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * The secret source of a running router: a look-up name {@code file:<path>} ({@link SecretRef#FILE_PREFIX}) is the
 * file's text (stripped), any other name is an environment variable. Files are read once when first asked for and
 * then only by {@link #refresh} (blocking: call it off the event loop), so a look-up on the request path is a map
 * read. A file that cannot be read answers null (as an unset variable would); one that turns unreadable after it was
 * read keeps its last text and says so once, so a Secret volume's swap in progress never opens or closes the router.
 */
public final class SecretFiles implements UnaryOperator<String> {
  private static final Logger LOG = Logger.getLogger(SecretFiles.class.getName());

  private record Read(boolean readable, String text) {
  }

  private final UnaryOperator<String> env;
  private final Map<String, Read> files = new ConcurrentHashMap<>();

  public SecretFiles(UnaryOperator<String> env) {
    this.env = env;
  }

  @Override
  public String apply(String name) {
    if (name == null) return null;
    if (!name.startsWith(SecretRef.FILE_PREFIX)) return env.apply(name);
    String path = name.substring(SecretRef.FILE_PREFIX.length());
    Read read = files.get(path);
    if (read == null) {
      read = read(path);
      if (read == null) return null;
      files.putIfAbsent(path, read);
    }
    return read.text();
  }

  /** Re-reads every file asked for so far (they are a few small files); true when a text changed. */
  public boolean refresh() {
    boolean changed = false;
    for (Map.Entry<String, Read> entry : files.entrySet()) {
      String path = entry.getKey();
      Read before = entry.getValue();
      Read now = read(path);
      if (now == null) {
        if (before.readable()) LOG.warning(() -> "secret file " + path + " is unreadable: its last text stays in use");
        files.put(path, new Read(false, before.text()));
        continue;
      }
      files.put(path, now);
      if (!before.readable()) LOG.info(() -> "secret file " + path + " is readable again");
      if (!Objects.equals(now.text(), before.text())) {
        changed = true;
        LOG.info(() -> "secret file " + path + " changed: re-read");
      }
    }
    return changed;
  }

  private static Read read(String path) {
    try {
      return new Read(true, Files.readString(Path.of(path), StandardCharsets.UTF_8).strip());
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
