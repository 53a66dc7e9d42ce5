package narwhal.common.config;

/**
 * Where a secret comes from (docs/configuration.md#secrets): a file ({@code *_file}, re-read when it changes, as a
 * Kubernetes Secret mounted as a volume is rotated) or an environment variable ({@code *_env}); neither is "none".
 * The secret's value never appears in the fleet file. {@link #lookupName} is what to ask a secret source for
 * ({@link narwhal.common.auth.SecretFiles}, or a plain environment in tests).
 *
 * @param fileKey the config key naming the file, e.g. {@code server.api_key_file}
 * @param file the file's path, "" when not set
 * @param envKey the config key naming the variable, e.g. {@code server.api_key_env}
 * @param env the variable's name, "" when not set
 */
public record SecretRef(String fileKey, String file, String envKey, String env) {
  /** The prefix of a file's look-up name: no environment variable name can start with it. */
  public static final String FILE_PREFIX = "file:";

  public boolean configured() {
    return !file.isEmpty() || !env.isEmpty();
  }

  /** The file (it wins when both are set) or the variable; null when neither is set. */
  public String lookupName() {
    if (!file.isEmpty()) return FILE_PREFIX + file;
    return env.isEmpty() ? null : env;
  }

  /** The config key that names where the secret comes from. */
  public String key() {
    return file.isEmpty() ? envKey : fileKey;
  }

  /** "the file /run/secrets/x" or "the environment variable X", for messages. */
  public String describe() {
    return file.isEmpty() ? "the environment variable " + env : "the file " + file;
  }

  /** Refuses a section that names both a file and a variable for one secret: which one wins would be a guess. */
  static void notBoth(String fileKey, String file, String envKey, String env) {
    if (!file.isEmpty() && !env.isEmpty()) {
      throw ConfigException.invalid(fileKey, file, "\"\" when " + envKey + " is set (\"" + env + "\"): a secret comes "
          + "from one file or one variable");
    }
  }
}
