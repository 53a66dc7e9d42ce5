package narwhal.common.bus;

import narwhal.common.config.ClusterConfig;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * The cluster secret (docs/operations.md#threat-model): {@code cluster.secret_file} (re-read when it changes) or the
 * environment variable named by {@code cluster.secret_env}, plus during a rotation {@code cluster.previous_secret_file},
 * accepted but never written with. A secret that is missing, unreadable or shorter than {@link #MIN_BYTES} bytes
 * stops the start with a message naming the key; one that turns bad later keeps the secret read before (logged).
 */
public final class ClusterSecret {
  public static final int MIN_BYTES = 32;
  private static final Logger LOG = Logger.getLogger(ClusterSecret.class.getName());
  /** No secret configured: nothing is signed or verified. */
  public static final ClusterSecret NONE = new ClusterSecret(null, null, null);

  private final ClusterConfig cluster;
  private final UnaryOperator<String> env;
  private volatile List<byte[]> keys;
  private long fileModified;
  private long previousModified;

  private ClusterSecret(ClusterConfig cluster, UnaryOperator<String> env, List<byte[]> keys) {
    this.cluster = cluster;
    this.env = env;
    this.keys = keys == null ? List.of() : keys;
  }

  /** Reads the configured secret; {@link #NONE} when none is configured. */
  public static ClusterSecret load(ClusterConfig cluster, UnaryOperator<String> env) {
    if (!cluster.hasSecret()) return NONE;
    ClusterSecret secret = new ClusterSecret(cluster, env, null);
    secret.keys = secret.read();
    return secret;
  }

  public boolean enabled() {
    return !keys.isEmpty();
  }

  /** The secret to write with first, then the previous one (a rotation); empty without a secret. */
  List<byte[]> keys() {
    return keys;
  }

  /** Re-reads the secret files when they changed (blocking file I/O: call off the event loop); a bad file keeps the old secret. */
  public void refresh() {
    if (cluster == null) return;
    long modified = modified(cluster.secretFile());
    long previous = modified(cluster.previousSecretFile());
    if (modified == fileModified && previous == previousModified) return;
    try {
      keys = read();
      LOG.info("cluster secret re-read (cluster.secret_file or cluster.previous_secret_file changed)");
    } catch (IllegalArgumentException bad) {
      fileModified = modified;
      previousModified = previous;
      LOG.warning(bad.getMessage() + "; the secret read before stays in use");
    }
  }

  private List<byte[]> read() {
    List<byte[]> out = new ArrayList<>();
    if (!cluster.secretFile().isEmpty()) {
      fileModified = modified(cluster.secretFile());
      out.add(file("cluster.secret_file", cluster.secretFile()));
    } else {
      String value = env.apply(cluster.secretEnv());
      if (value == null) {
        throw new IllegalArgumentException("cluster.secret_env: the environment variable " + cluster.secretEnv()
            + " holding the cluster secret is not set");
      }
      out.add(checked("cluster.secret_env", "the environment variable " + cluster.secretEnv(), value.strip().getBytes(StandardCharsets.UTF_8)));
    }
    if (!cluster.previousSecretFile().isEmpty()) {
      previousModified = modified(cluster.previousSecretFile());
      out.add(file("cluster.previous_secret_file", cluster.previousSecretFile()));
    }
    return List.copyOf(out);
  }

  private static byte[] file(String key, String path) {
    byte[] bytes;
    try {
      bytes = new String(Files.readAllBytes(Path.of(path)), StandardCharsets.UTF_8).strip().getBytes(StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(key + ": cannot read the cluster secret " + path + " (" + e.getMessage() + ")");
    }
    return checked(key, path, bytes);
  }

  private static byte[] checked(String key, String where, byte[] bytes) {
    if (bytes.length < MIN_BYTES) {
      Arrays.fill(bytes, (byte) 0);
      throw new IllegalArgumentException(key + ": the cluster secret in " + where + " is " + bytes.length
          + " bytes; expected at least " + MIN_BYTES + " (e.g. openssl rand -base64 48)");
    }
    return bytes;
  }

  private static long modified(String path) {
    if (path.isEmpty()) return 0;
    try {
      return Files.getLastModifiedTime(Path.of(path)).toMillis() ^ Files.size(Path.of(path));
    } catch (IOException e) {
      return -1;
    }
  }
}
