package narwhal.router;

import narwhal.common.auth.BearerKeys;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.SecretRef;

import java.util.function.UnaryOperator;

/**
 * Who may call the router (docs/configuration.md {@code server.api_key_env}/{@code _file}, {@code server.ops_token_env}/
 * {@code _file}): the client keys that {@code /v1/*} then needs (the server's and the tenants', {@link Tenants}) and the
 * token that {@code /metrics} and
 * {@code /narwhal/state} then need, read from the files or environment variables the fleet file names. {@code /health} and {@code /ready} are always open. The engines'
 * key ({@code engine.engine_api_key_env}) is refused as a client key or ops token.
 */
public record Access(BearerKeys clients, BearerKeys ops, Tenants tenants) {

  /**
   * Reads the keys for {@code cfg} through {@code env} (a {@link narwhal.common.auth.SecretFiles} or an environment);
   * refuses (naming the key) a named file or variable that is missing or empty, or the engines' key.
   */
  public static Access resolve(NarwhalConfig cfg, UnaryOperator<String> env) {
    BearerKeys clients = BearerKeys.from(cfg.server().apiKey(), env);
    BearerKeys ops = BearerKeys.from(cfg.server().opsToken(), env);
    String engineKey = cfg.engine().engineApiKey(env);
    if (!engineKey.isEmpty()) {
      if (clients.matches(engineKey)) throw engineKeyReused(cfg.server().apiKey(), cfg);
      if (ops.matches(engineKey)) throw engineKeyReused(cfg.server().opsToken(), cfg);
    }
    return new Access(clients, ops, Tenants.resolve(cfg, env, engineKey));
  }

  private static ConfigException engineKeyReused(SecretRef source, NarwhalConfig cfg) {
    return new ConfigException(source.key(), source.key() + ": a key in " + source.describe() + " is the engines' key ("
        + cfg.engine().engineApiKey().key() + "): expected client keys different from the engines' key");
  }

  /**
   * Refuses {@code cfg} when a fresh start with it would stop: a client key or ops token source that cannot be read,
   * or an engines' key file or variable named but missing or empty (preflight would fail every engine).
   */
  public static void verifyStart(NarwhalConfig cfg, UnaryOperator<String> env) {
    resolve(cfg, env);
    SecretRef engine = cfg.engine().engineApiKey();
    if (engine.configured() && cfg.engine().engineApiKey(env).isEmpty()) {
      throw new ConfigException(engine.key(), engine.key() + ": " + engine.describe() + (engine.file().isEmpty()
          ? " is not set" : " is missing, unreadable") + " or empty: expected the engines' API key (vLLM --api-key)");
    }
  }
}
