package narwhal.router;

import narwhal.common.auth.BearerKeys;
import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;

import java.util.function.UnaryOperator;

/**
 * Who may call the router (docs/configuration.md {@code server.api_key_env}, {@code server.ops_token_env}): the client keys
 * that {@code /v1/*} then needs and the token that {@code /metrics} and {@code /narwhal/state} then need, read from
 * the environment variables the fleet file names. {@code /health} and {@code /ready} are always open. The engines'
 * key ({@code engine.engine_api_key_env}) is refused as a client key or ops token.
 */
record Access(BearerKeys clients, BearerKeys ops) {

  /** Reads the keys for {@code cfg}; refuses (naming the key) a named variable that is unset, or the engines' key. */
  static Access resolve(NarwhalConfig cfg, UnaryOperator<String> env) {
    BearerKeys clients = BearerKeys.fromEnv("server.api_key_env", cfg.server().apiKeyEnv(), env);
    BearerKeys ops = BearerKeys.fromEnv("server.ops_token_env", cfg.server().opsTokenEnv(), env);
    String engineKey = cfg.engine().engineApiKey(env);
    if (!engineKey.isEmpty()) {
      if (clients.matches(engineKey)) throw engineKeyReused("server.api_key_env", cfg.server().apiKeyEnv());
      if (ops.matches(engineKey)) throw engineKeyReused("server.ops_token_env", cfg.server().opsTokenEnv());
    }
    return new Access(clients, ops);
  }

  private static ConfigException engineKeyReused(String key, String envName) {
    return new ConfigException(key, key + ": a key in " + envName + " is the engines' key (engine.engine_api_key_env): "
        + "expected client keys different from the engines' key");
  }
}
