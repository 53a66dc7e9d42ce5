package narwhal.common.config;

import static narwhal.common.config.Fleets.minimal;
import static narwhal.common.config.Fleets.withSection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ConfigRefusalTest {

  private static final String URL_EXPECTED =
      "expected an http:// or https:// URL with a host and an optional port";

  private static JsonObject withEngine(int index, String key, Object value) {
    JsonObject fleet = minimal();
    fleet.getJsonArray("engines").getJsonObject(index).put(key, value);
    return fleet;
  }

  private static Arguments refused(JsonObject fleet, String key, String message) {
    return Arguments.of(fleet, key, message);
  }

  static Stream<Arguments> unknownKeys() {
    return Stream.of(
        refused(minimal().put("modle", "m"), "modle", "modle: unknown key"),
        refused(minimal().put("telemetri", new JsonObject()), "telemetri", "telemetri: unknown key"),
        refused(withSection("telemetry", "{\"otlp_endpoints\": \"\"}"), "telemetry.otlp_endpoints",
            "telemetry.otlp_endpoints: unknown key"),
        refused(withSection("metrics", "{\"vertx_https\": false}"), "metrics.vertx_https", "metrics.vertx_https: unknown key"),
        refused(withSection("serving", "{\"retry_bugdet\": 10}"), "serving.retry_bugdet",
            "serving.retry_bugdet: unknown key"),
        refused(withSection("engine", "{\"connector\": \"nixl\", \"kv_connector\": \"nixl\"}"),
            "engine.kv_connector", "engine.kv_connector: unknown key"),
        refused(withEngine(1, "gpu", 0), "engines[1].gpu", "engines[1].gpu: unknown key"));
  }

  static Stream<Arguments> missingOrMalformedRequiredValues() {
    JsonObject noModel = minimal();
    noModel.remove("model");
    JsonObject noEngines = minimal();
    noEngines.remove("engines");
    JsonObject noIid = minimal();
    noIid.getJsonArray("engines").getJsonObject(0).remove("iid");
    JsonObject noUrl = minimal();
    noUrl.getJsonArray("engines").getJsonObject(1).remove("url");
    return Stream.of(
        refused(noModel, "model", "model: missing: expected a non-empty string"),
        refused(minimal().put("model", ""), "model", "model: \"\" is not valid: expected a non-empty string"),
        refused(minimal().put("model", 7), "model", "model: 7 is not valid: expected a non-empty string"),
        refused(noEngines, "engines", "engines: missing: expected a non-empty list of engines"),
        refused(minimal().put("engines", new JsonArray()), "engines",
            "engines: [] is not valid: expected a non-empty list of engines"),
        refused(minimal().put("engines", new JsonObject()), "engines",
            "engines: {} is not valid: expected a non-empty list of engines"),
        refused(minimal().put("engines", new JsonArray().add("P0")), "engines[0]",
            "engines[0]: \"P0\" is not valid: expected an object"),
        refused(noIid, "engines[0].iid", "engines[0].iid: missing: expected a non-empty string"),
        refused(noUrl, "engines[1].url", "engines[1].url: missing: " + URL_EXPECTED));
  }

  static Stream<Arguments> engineEntries() {
    JsonObject duplicate = minimal();
    duplicate.getJsonArray("engines")
        .add(new JsonObject().put("iid", "D0").put("url", "http://127.0.0.1:8104").put("role", "decode"));
    return Stream.of(
        refused(duplicate, "engines[2].iid", "engines[2].iid: \"D0\" is not valid: expected a unique iid"),
        refused(withEngine(1, "role", "gpu"), "engines[1].role",
            "engines[1].role: \"gpu\" is not valid: expected one of \"prefill\", \"decode\", \"both\""),
        refused(withEngine(0, "role", "PREFILL"), "engines[0].role",
            "engines[0].role: \"PREFILL\" is not valid: expected one of \"prefill\", \"decode\", \"both\""),
        refused(withEngine(0, "url", "ftp://127.0.0.1:8101"), "engines[0].url",
            "engines[0].url: \"ftp://127.0.0.1:8101\" is not valid: " + URL_EXPECTED),
        refused(withEngine(0, "url", "127.0.0.1:8101"), "engines[0].url",
            "engines[0].url: \"127.0.0.1:8101\" is not valid: " + URL_EXPECTED),
        refused(withEngine(0, "url", "http://:8101"), "engines[0].url",
            "engines[0].url: \"http://:8101\" is not valid: " + URL_EXPECTED),
        refused(withEngine(0, "url", "http://127.0.0.1:0"), "engines[0].url",
            "engines[0].url: \"http://127.0.0.1:0\" is not valid: " + URL_EXPECTED),
        refused(withEngine(0, "url", "http://127.0.0.1:8101/?x=1"), "engines[0].url",
            "engines[0].url: \"http://127.0.0.1:8101/?x=1\" is not valid: " + URL_EXPECTED),
        refused(withEngine(0, "url", "http://local host:8101"), "engines[0].url",
            "engines[0].url: \"http://local host:8101\" is not valid: " + URL_EXPECTED),
        refused(withEngine(0, "attestation_url", "/attestation"), "engines[0].attestation_url",
            "engines[0].attestation_url: \"/attestation\" is not valid: expected \"\" or an http:// or "
                + "https:// URL with a host and an optional port"),
        refused(withEngine(0, "kv_side_channel", "10.0.0.5"), "engines[0].kv_side_channel",
            "engines[0].kv_side_channel: \"10.0.0.5\" is not valid: expected \"\" or \"host:port\""),
        refused(withEngine(0, "kv_side_channel", "10.0.0.5:70000"), "engines[0].kv_side_channel",
            "engines[0].kv_side_channel: \"10.0.0.5:70000\" is not valid: expected \"\" or \"host:port\""));
  }

  static Stream<Arguments> wrongTypes() {
    return Stream.of(
        refused(withSection("serving", "{\"max_attempts\": \"3\"}"), "serving.max_attempts",
            "serving.max_attempts: \"3\" is not valid: expected an integer from 1 to 3"),
        refused(withSection("serving", "{\"max_attempts\": 1.5}"), "serving.max_attempts",
            "serving.max_attempts: 1.5 is not valid: expected an integer from 1 to 3"),
        refused(withSection("serving", "{\"max_connections\": true}"), "serving.max_connections",
            "serving.max_connections: true is not valid: expected an integer of at least 1"),
        refused(withSection("engine", "{\"first_token_timeout_s\": \"2.5\"}"), "engine.first_token_timeout_s",
            "engine.first_token_timeout_s: \"2.5\" is not valid: expected a number greater than 0"),
        refused(withSection("server", "{\"port\": null}"), "server.port",
            "server.port: null is not valid: expected an integer from 0 to 65535"),
        refused(withSection("server", "{\"event_loops\": 0}"), "server.event_loops",
            "server.event_loops: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("server", "{\"event_loops\": 1.5}"), "server.event_loops",
            "server.event_loops: 1.5 is not valid: expected an integer of at least 1"),
        refused(withSection("metrics", "{\"vertx_http\": \"off\"}"), "metrics.vertx_http",
            "metrics.vertx_http: \"off\" is not valid: expected true or false"),
        refused(withSection("telemetry", "{\"otlp_endpoint\": \"collector:4318\"}"), "telemetry.otlp_endpoint",
            "telemetry.otlp_endpoint: \"collector:4318\" is not valid: expected \"\" (off) or an http:// or https:// URL such as http://collector:4318"),
        refused(withSection("telemetry", "{\"sample_ratio\": 1.5}"), "telemetry.sample_ratio",
            "telemetry.sample_ratio: 1.5 is not valid: expected a number from 0 to 1"),
        refused(withSection("telemetry", "{\"service_name\": \" \"}"), "telemetry.service_name",
            "telemetry.service_name: \" \" is not valid: expected a non-empty string"),
        refused(withSection("sim", "{\"embedded\": \"yes\"}"), "sim.embedded",
            "sim.embedded: \"yes\" is not valid: expected true or false"),
        refused(withSection("cluster", "{\"enabled\": 1}"), "cluster.enabled",
            "cluster.enabled: 1 is not valid: expected true or false"),
        refused(withSection("cluster", "{\"members\": \"127.0.0.1\"}"), "cluster.members",
            "cluster.members: \"127.0.0.1\" is not valid: expected a non-empty list of \"host\" or \"host:port\""),
        refused(withSection("engine", "{\"engine_api_key_env\": 0}"), "engine.engine_api_key_env",
            "engine.engine_api_key_env: 0 is not valid: expected a string"),
        refused(minimal().put("serving", 3), "serving", "serving: 3 is not valid: expected an object"),
        refused(minimal().put("engine_contract", "pinned"), "engine_contract",
            "engine_contract: \"pinned\" is not valid: expected null or an object"),
        refused(minimal().put("schema", "narwhal.router"), "schema",
            "schema: \"narwhal.router\" is not valid: expected \"narwhal.fleet\""),
        refused(minimal().put("schema_version", 2), "schema_version",
            "schema_version: 2 is not valid: expected 1"),
        refused(minimal().put("schema_version", "1"), "schema_version",
            "schema_version: \"1\" is not valid: expected 1"));
  }

  static Stream<Arguments> outOfRange() {
    return Stream.of(
        refused(withSection("serving", "{\"max_attempts\": 5}"), "serving.max_attempts",
            "serving.max_attempts: 5 is not valid: expected an integer from 1 to 3"),
        refused(withSection("serving", "{\"max_attempts\": 0}"), "serving.max_attempts",
            "serving.max_attempts: 0 is not valid: expected an integer from 1 to 3"),
        refused(withSection("serving", "{\"max_connections\": 0}"), "serving.max_connections",
            "serving.max_connections: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("serving", "{\"max_request_bytes\": 1023}"), "serving.max_request_bytes",
            "serving.max_request_bytes: 1023 is not valid: expected an integer of at least 1024"),
        refused(withSection("serving", "{\"max_response_bytes\": 10}"), "serving.max_response_bytes",
            "serving.max_response_bytes: 10 is not valid: expected an integer of at least 1024"),
        refused(withSection("serving", "{\"request_timeout_s\": 0}"), "serving.request_timeout_s",
            "serving.request_timeout_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("serving", "{\"prefill_timeout_s\": -1}"), "serving.prefill_timeout_s",
            "serving.prefill_timeout_s: -1 is not valid: expected a number greater than 0"),
        refused(withSection("serving", "{\"retry_base_s\": 0}"), "serving.retry_base_s",
            "serving.retry_base_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("serving", "{\"retry_cap_s\": 0.05}"), "serving.retry_cap_s",
            "serving.retry_cap_s: 0.05 is not valid: expected a number of at least serving.retry_base_s (0.1)"),
        refused(withSection("serving", "{\"retry_base_s\": 2, \"retry_cap_s\": 1.5}"), "serving.retry_cap_s",
            "serving.retry_cap_s: 1.5 is not valid: expected a number of at least serving.retry_base_s (2)"),
        refused(withSection("serving", "{\"retry_budget\": -1}"), "serving.retry_budget",
            "serving.retry_budget: -1 is not valid: expected an integer of at least 0"),
        refused(withSection("serving", "{\"retry_replenish\": 1.5}"), "serving.retry_replenish",
            "serving.retry_replenish: 1.5 is not valid: expected a number from 0 to 1"),
        refused(withSection("serving", "{\"graceful_timeout_s\": -0.5}"), "serving.graceful_timeout_s",
            "serving.graceful_timeout_s: -0.5 is not valid: expected a number of at least 0"),
        refused(withSection("serving", "{\"batch_parallelism\": 0}"), "serving.batch_parallelism",
            "serving.batch_parallelism: 0 is not valid: expected an integer from 1 to 1024"),
        refused(withSection("serving", "{\"max_batch_prompts\": 0}"), "serving.max_batch_prompts",
            "serving.max_batch_prompts: 0 is not valid: expected an integer from 1 to 1000000"),
        refused(withSection("serving", "{\"max_legs_in_flight\": 0}"), "serving.max_legs_in_flight",
            "serving.max_legs_in_flight: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("flow", "{\"burst\": -1}"), "flow.burst",
            "flow.burst: -1 is not valid: expected an integer from 0 to 1000"),
        refused(withSection("flow", "{\"burst\": 1001}"), "flow.burst",
            "flow.burst: 1001 is not valid: expected an integer from 0 to 1000"),
        refused(withSection("flow", "{\"burst\": 2.5}"), "flow.burst",
            "flow.burst: 2.5 is not valid: expected an integer from 0 to 1000"),
        refused(withSection("flow", "{\"burst\": \"x\"}"), "flow.burst",
            "flow.burst: \"x\" is not valid: expected an integer from 0 to 1000"),
        refused(withSection("serving", "{\"drain_delay_s\": -1}"), "serving.drain_delay_s",
            "serving.drain_delay_s: -1 is not valid: expected a number of at least 0"),
        refused(withSection("serving", "{\"drain_delay_s\": \"5s\"}"), "serving.drain_delay_s",
            "serving.drain_delay_s: \"5s\" is not valid: expected a number of at least 0"),
        refused(withSection("engine", "{\"first_token_timeout_s\": 0}"), "engine.first_token_timeout_s",
            "engine.first_token_timeout_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("engine", "{\"decode_read_timeout_s\": -1}"), "engine.decode_read_timeout_s",
            "engine.decode_read_timeout_s: -1 is not valid: expected a number of at least 0"),
        refused(withSection("engine", "{\"connect_timeout_s\": 0}"), "engine.connect_timeout_s",
            "engine.connect_timeout_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("engine", "{\"pool_timeout_s\": 0}"), "engine.pool_timeout_s",
            "engine.pool_timeout_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("engine", "{\"health_timeout_s\": 0}"), "engine.health_timeout_s",
            "engine.health_timeout_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("engine", "{\"kv_lease_s\": -1}"), "engine.kv_lease_s",
            "engine.kv_lease_s: -1 is not valid: expected a number of at least 0"),
        refused(withSection("engine", "{\"connector\": \"lmcache\"}"), "engine.connector",
            "engine.connector: \"lmcache\" is not valid: expected one of \"nixl\""),
        refused(withSection("engine", "{\"dialect\": \"sglang\"}"), "engine.dialect",
            "engine.dialect: \"sglang\" is not valid: expected one of \"vllm\""),
        refused(withSection("recovery", "{\"eject_after\": 0}"), "recovery.eject_after",
            "recovery.eject_after: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("recovery", "{\"monitor_interval_s\": 0}"), "recovery.monitor_interval_s",
            "recovery.monitor_interval_s: 0 is not valid: expected a number greater than 0"),
        refused(withSection("recovery", "{\"readmit_every\": 0}"), "recovery.readmit_every",
            "recovery.readmit_every: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("recovery", "{\"liveness_every\": 0}"), "recovery.liveness_every",
            "recovery.liveness_every: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("recovery", "{\"liveness_misses\": 0}"), "recovery.liveness_misses",
            "recovery.liveness_misses: 0 is not valid: expected an integer of at least 1"),
        refused(withSection("recovery", "{\"failure_quarantine_s\": -5}"), "recovery.failure_quarantine_s",
            "recovery.failure_quarantine_s: -5 is not valid: expected a number of at least 0"),
        refused(withSection("recovery", "{\"engine_restart_policy\": \"rolling\"}"),
            "recovery.engine_restart_policy",
            "recovery.engine_restart_policy: \"rolling\" is not valid: expected one of \"individual\", \"whole_wave\""),
        refused(withSection("server", "{\"port\": 65536}"), "server.port",
            "server.port: 65536 is not valid: expected an integer from 0 to 65535"),
        refused(withSection("server", "{\"idle_timeout_s\": -1}"), "server.idle_timeout_s",
            "server.idle_timeout_s: -1 is not valid: expected 0 (never) or a number from 0.01 to 86400"),
        refused(withSection("server", "{\"idle_timeout_s\": 0.001}"), "server.idle_timeout_s",
            "server.idle_timeout_s: 0.001 is not valid: expected 0 (never) or a number from 0.01 to 86400"),
        refused(withSection("server", "{\"max_connections\": -1}"), "server.max_connections",
            "server.max_connections: -1 is not valid: expected an integer of at least 0"),
        refused(withSection("server", "{\"host\": \"\"}"), "server.host",
            "server.host: \"\" is not valid: expected a non-empty string"),
        refused(withSection("cluster", "{\"port\": 0}"), "cluster.port",
            "cluster.port: 0 is not valid: expected an integer from 1 to 65535"),
        refused(withSection("cluster", "{\"members\": []}"), "cluster.members",
            "cluster.members: [] is not valid: expected a non-empty list of \"host\" or \"host:port\""),
        refused(withSection("cluster", "{\"members\": [\"10.0.0.1:5701\", \"a:b:c\"]}"), "cluster.members[1]",
            "cluster.members[1]: \"a:b:c\" is not valid: expected \"host\" or \"host:port\""),
        refused(withSection("cluster", "{\"members\": [\"10.0.0.1:0\"]}"), "cluster.members[0]",
            "cluster.members[0]: \"10.0.0.1:0\" is not valid: expected \"host\" or \"host:port\""),
        refused(withSection("cluster", "{\"name\": \" \"}"), "cluster.name",
            "cluster.name: \" \" is not valid: expected a non-empty string"),
        refused(withSection("admin", "{\"token_env\": \"\"}"), "admin.token_env",
            "admin.token_env: \"\" is not valid: expected a non-empty string"),
        refused(withSection("journal", "{\"path\": \"\"}"), "journal.path",
            "journal.path: \"\" is not valid: expected a non-empty string"),
        refused(withSection("journal", "{\"max_bytes\": 100}"), "journal.max_bytes",
            "journal.max_bytes: 100 is not valid: expected 0 (never rotate) or a number of bytes of at least 1024"),
        refused(withSection("journal", "{\"max_bytes\": -1}"), "journal.max_bytes",
            "journal.max_bytes: -1 is not valid: expected 0 (never rotate) or a number of bytes of at least 1024"),
        refused(withSection("journal", "{\"keep\": 0}"), "journal.keep",
            "journal.keep: 0 is not valid: expected an integer from 1 to 1000"));
  }

  static Stream<Arguments> crossKeyRules() {
    return Stream.of(
        refused(withSection("server", "{\"port\": 8001, \"health_port\": 8001}"), "server.health_port",
            "server.health_port: 8001 is not valid: expected -1 (none), 0 (the OS picks one) or a port other than "
                + "server.port (8001), which the client traffic takes"),
        refused(withSection("recovery", "{\"engine_restart_policy\": \"whole_wave\"}"),
            "recovery.engine_restart_policy",
            "recovery.engine_restart_policy: \"whole_wave\" is not valid: expected \"individual\" when "
                + "engine_contract is null (\"whole_wave\" needs an engine_contract)"),
        refused(withSection("recovery", "{\"engine_restart_policy\": \"whole_wave\"}")
                .put("engine_contract", null),
            "recovery.engine_restart_policy",
            "recovery.engine_restart_policy: \"whole_wave\" is not valid: expected \"individual\" when "
                + "engine_contract is null (\"whole_wave\" needs an engine_contract)"),
        refused(withSection("server", "{\"api_key_env\": \"VLLM_API_KEY\"}")
                .put("engine", new JsonObject().put("engine_api_key_env", "VLLM_API_KEY")),
            "server.api_key_env", "server.api_key_env: \"VLLM_API_KEY\" is not valid: expected a variable other than "
                + "engine.engine_api_key_env (the engines' key is never a client key)"),
        refused(withSection("server", "{\"ops_token_env\": \"VLLM_API_KEY\"}")
                .put("engine", new JsonObject().put("engine_api_key_env", "VLLM_API_KEY")),
            "server.ops_token_env", "server.ops_token_env: \"VLLM_API_KEY\" is not valid: expected a variable other than "
                + "engine.engine_api_key_env (the engines' key is never a client key)"),
        refused(withSection("server", "{\"api_key_env\": \"MY-KEYS\"}"), "server.api_key_env",
            "server.api_key_env: \"MY-KEYS\" is not valid: expected \"\" or an environment variable name (letters, digits, _)"));
  }

  @ParameterizedTest
  @MethodSource({"unknownKeys", "missingOrMalformedRequiredValues", "engineEntries", "wrongTypes",
      "outOfRange", "crossKeyRules"})
  void refusesWithKeyValueAndExpectation(JsonObject fleet, String key, String message) {
    ConfigException e = assertThrows(ConfigException.class, () -> NarwhalConfig.fromJson(fleet));
    assertEquals(message, e.getMessage());
    assertEquals(key, e.key());
  }

  @ParameterizedTest
  @MethodSource({"unknownKeys", "engineEntries"})
  void parsingTheTextRefusesTheSameWay(JsonObject fleet, String key, String message) {
    ConfigException e = assertThrows(ConfigException.class, () -> NarwhalConfig.parse(fleet.encodePrettily()));
    assertEquals(message, e.getMessage());
  }
}
