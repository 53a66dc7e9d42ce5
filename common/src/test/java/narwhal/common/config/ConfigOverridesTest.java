package narwhal.common.config;

import static narwhal.common.config.Fleets.minimal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Environment and {@code --set} overrides: precedence, how texts are read per type, and refusals naming the source. */
class ConfigOverridesTest {

  private static final String FILE = minimal().put("server", new JsonObject().put("port", 8000)).encode();

  private static NarwhalConfig parse(Map<String, String> env, String... sets) {
    return ConfigOverrides.of(env, List.of(sets)).parse(FILE);
  }

  private static ConfigException refused(Map<String, String> env, String... sets) {
    return assertThrows(ConfigException.class, () -> parse(env, sets));
  }

  @Test
  void precedenceIsFileThenEnvironmentThenSetAndTheLastSetWins() {
    assertEquals(8000, parse(Map.of()).server().port());
    assertEquals(8001, parse(Map.of("NARWHAL_SERVER_PORT", "8001")).server().port());
    assertEquals(8002, parse(Map.of("NARWHAL_SERVER_PORT", "8001"), "server.port=8002").server().port());
    assertEquals(8003, parse(Map.of(), "server.port=8002", "server.port=8003").server().port());
  }

  @Test
  void textsAreReadByTheTypeOfTheKey() {
    NarwhalConfig c = parse(Map.of("NARWHAL_CLUSTER_HOST", "0.0.0.0", "NARWHAL_CLUSTER_ENABLED", "true",
            "NARWHAL_CLUSTER_MEMBERS", "10.0.0.1, 10.0.0.2:5702", "NARWHAL_CLUSTER_TLS_KEY_STORE_PASSWORD_ENV", "BUS_PW"),
        "engine.first_token_timeout_s=0.5", "serving.max_attempts=3", "cluster.public_host=203.0.113.7",
        "server.api_key_env=CLIENT_KEYS", "engine.engine_api_key_env=", "journal.path=-",
        "cluster.kubernetes.namespace=prod", "model=a=b");
    assertEquals("0.0.0.0", c.cluster().host());
    assertTrue(c.cluster().enabled());
    assertEquals(List.of("10.0.0.1", "10.0.0.2:5702"), c.cluster().members());
    assertEquals("BUS_PW", c.cluster().tls().keyStorePasswordEnv());
    assertEquals(0.5, c.engine().firstTokenTimeoutS());
    assertEquals(3, c.serving().maxAttempts());
    assertEquals("203.0.113.7", c.cluster().publicHost());
    assertEquals("CLIENT_KEYS", c.server().apiKeyEnv());
    assertEquals("", c.engine().engineApiKeyEnv());
    assertTrue(c.journal().toStdout(), "the journal section is created when the file has none");
    assertEquals("prod", c.cluster().kubernetes().namespace());
    assertEquals("a=b", c.model(), "a value may hold '='");

    NarwhalConfig json = parse(Map.of("NARWHAL_CLUSTER_MEMBERS", "[\"10.0.0.9\"]"),
        "engine_contract={\"vllm_version\": \"0.11.0\"}",
        "engines=[{\"iid\": \"B0\", \"url\": \"http://10.0.0.5:8000\"}]");
    assertEquals(List.of("10.0.0.9"), json.cluster().members());
    assertEquals(new JsonObject().put("vllm_version", "0.11.0"), json.engineContract());
    assertEquals(List.of("B0"), json.engines().stream().map(EngineConfig::iid).toList());
    assertNull(parse(Map.of(), "engine_contract=null").engineContract());
  }

  @Test
  void aBadOverrideIsRefusedNamingKeyValueExpectationAndSource() {
    ConfigException env = refused(Map.of("NARWHAL_SERVER_PORT", "eighty"));
    assertEquals("server.port", env.key());
    assertEquals("server.port: \"eighty\" is not valid: expected an integer from 0 to 65535 "
        + "(from environment variable NARWHAL_SERVER_PORT)", env.getMessage());
    ConfigException set = refused(Map.of("NARWHAL_SERVER_PORT", "8001"), "server.port=70000");
    assertEquals("server.port: 70000 is not valid: expected an integer from 0 to 65535 (from --set server.port=70000)",
        set.getMessage());
    assertEquals("flow.burst: \"x\" is not valid: expected an integer from 0 to 1000 (from environment variable NARWHAL_FLOW_BURST)",
        refused(Map.of("NARWHAL_FLOW_BURST", "x")).getMessage());
    assertEquals("flow.burst: 1001 is not valid: expected an integer from 0 to 1000 (from --set flow.burst=1001)",
        refused(Map.of(), "flow.burst=1001").getMessage());
    assertEquals("cluster.enabled: \"yes\" is not valid: expected true or false (from --set cluster.enabled=yes)",
        refused(Map.of(), "cluster.enabled=yes").getMessage());
    assertEquals("cluster.members[1]: \"a:b:c\" is not valid: expected \"host\" or \"host:port\" "
        + "(from environment variable NARWHAL_CLUSTER_MEMBERS)", refused(Map.of("NARWHAL_CLUSTER_MEMBERS", "h1,a:b:c")).getMessage());
    assertEquals("engines[0]: \"B0\" is not valid: expected an object (from --set engines=B0)",
        refused(Map.of(), "engines=B0").getMessage());
    assertEquals("engine_contract: \"{oops\" is not valid: expected JSON (an object or null) (from --set engine_contract={oops)",
        refused(Map.of(), "engine_contract={oops").getMessage());
    assertEquals("server.prot: unknown key (from --set server.prot=1)", refused(Map.of(), "server.prot=1").getMessage());
    assertEquals("--set server.port: expected section.key=value, e.g. --set server.port=8001",
        refused(Map.of(), "server.port").getMessage());
  }

  @Test
  void theFilesOwnRefusalsStayTheFiles() {
    ConfigOverrides overrides = ConfigOverrides.of(Map.of("NARWHAL_SERVER_PORT", "8001"), List.of());
    ConfigException e = assertThrows(ConfigException.class,
        () -> overrides.parse(minimal().put("serving", new JsonObject().put("max_attempts", 9)).encode()));
    assertTrue(e.getMessage().startsWith("serving.max_attempts: 9 is not valid: expected an integer from 1 to "), e.getMessage());
    assertFalse(e.getMessage().contains("(from"), "no override set it: " + e.getMessage());
  }

  @Test
  void theSameOverridesApplyToEveryTextRead() {
    ConfigOverrides overrides = ConfigOverrides.of(Map.of(), List.of("server.port=9100"));
    assertEquals(9100, overrides.parse(FILE).server().port());
    NarwhalConfig reloaded = overrides.parse(minimal().put("server", new JsonObject().put("port", 8000))
        .put("serving", new JsonObject().put("max_attempts", 2)).encode());
    assertEquals(9100, reloaded.server().port());
    assertEquals(2, reloaded.serving().maxAttempts());
  }

  @Test
  void everyKeyHasItsOwnVariableAndOtherNarwhalVariablesAreLeftAlone() {
    assertEquals("NARWHAL_SERVER_PORT", ConfigOverrides.envName("server.port"));
    assertEquals("NARWHAL_CLUSTER_TLS_KEY_STORE_PASSWORD_ENV", ConfigOverrides.envName("cluster.tls.key_store_password_env"));
    assertTrue(ConfigOverrides.keys().containsAll(List.of("model", "engines", "engine_contract", "server.port",
        "server.api_key_env", "server.ops_token_env", "serving.graceful_timeout_s", "engine.engine_api_key_env",
        "recovery.eject_after", "cluster.members", "cluster.public_host", "cluster.discovery",
        "cluster.kubernetes.service_name", "cluster.kubernetes.namespace", "cluster.tls.enabled", "admin.token_env",
        "journal.path", "journal.max_bytes", "journal.keep", "sim.embedded")), ConfigOverrides.keys().toString());
    assertFalse(ConfigOverrides.keys().contains("cluster.tls"), "sections are overridden key by key");
    Map<String, String> env = Map.of("NARWHAL_ADMIN_TOKEN", "t", "NARWHAL_JAVA_OPTS", "-Xmx1g",
        "NARWHAL_CLUSTER_TLS_PASSWORD", "pw", "NARWHAL_SERVR_PORT", "1", "NARWHAL_SERVER_PORT", "8001", "PATH", "/bin");
    ConfigOverrides overrides = ConfigOverrides.of(env, List.of());
    assertEquals(1, overrides.list().size());
    assertEquals(new ConfigOverrides.Override("server.port", "8001", "environment variable NARWHAL_SERVER_PORT"),
        overrides.list().get(0));
    assertEquals(List.of("NARWHAL_SERVR_PORT"), ConfigOverrides.unmatched(env, overrides.parse(FILE)),
        "the variables the config names for secrets are not typos");
  }

  @Test
  void kubernetesServiceLinksAreNeitherOverridesNorTypos() {
    Map<String, String> env = Map.of("NARWHAL_SERVER_PORT", "tcp://10.96.0.12:12000", "NARWHAL_SERVER_SERVICE_HOST", "10.96.0.12",
        "NARWHAL_SERVER_SERVICE_PORT", "12000", "NARWHAL_SERVER_PORT_12000_TCP", "tcp://10.96.0.12:12000",
        "NARWHAL_SERVER_PORT_12000_TCP_ADDR", "10.96.0.12", "NARWHAL_CLUSTER_PORT", "TCP://10.96.0.13:5701",
        "NARWHAL_SERVING_MAX_ATTEMPTS", "2");
    ConfigOverrides overrides = ConfigOverrides.of(env, List.of());
    assertEquals(List.of(new ConfigOverrides.Override("serving.max_attempts", "2", "environment variable NARWHAL_SERVING_MAX_ATTEMPTS")),
        overrides.list(), "a tcp:// value is a service link, not server.port or cluster.port");
    NarwhalConfig config = overrides.parse(FILE);
    assertEquals(2, config.serving().maxAttempts());
    assertEquals(List.of(), ConfigOverrides.unmatched(env, config), "nor a typo to warn of");
    assertEquals(List.of("NARWHAL_CLUSTER_PORT", "NARWHAL_SERVER_PORT", "NARWHAL_SERVER_PORT_12000_TCP",
        "NARWHAL_SERVER_PORT_12000_TCP_ADDR", "NARWHAL_SERVER_SERVICE_HOST", "NARWHAL_SERVER_SERVICE_PORT"),
        ConfigOverrides.serviceLinks(env));
    assertThrows(ConfigException.class, () -> ConfigOverrides.of(Map.of("NARWHAL_SERVER_PORT", "12000x"), List.of()).parse(FILE),
        "any other bad value is still refused");
  }
}
