package narwhal.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ConfigRoundTripTest {

  private static void assertRoundTrips(NarwhalConfig config) {
    assertEquals(config, NarwhalConfig.fromJson(config.toJson()));
    assertEquals(config, NarwhalConfig.parse(config.toJson().encodePrettily()));
    assertEquals(config.toJson(), NarwhalConfig.fromJson(config.toJson()).toJson());
  }

  @Test
  void minimalFleetRoundTripsWithEveryDefaultWrittenOut() {
    NarwhalConfig config = NarwhalConfig.fromJson(Fleets.minimal());
    assertRoundTrips(config);
    JsonObject json = config.toJson();
    assertEquals("narwhal.fleet", json.getString("schema"));
    assertEquals(1, json.getInteger("schema_version"));
    assertEquals(600L, json.getJsonObject("serving").getValue("request_timeout_s"));
    assertEquals(2.5, json.getJsonObject("engine").getValue("first_token_timeout_s"));
    assertEquals("prefill", json.getJsonArray("engines").getJsonObject(0).getString("role"));
  }

  @Test
  void theWrittenJsonIsAFreshMutableCopy() {
    NarwhalConfig config = NarwhalConfig.fromJson(Fleets.minimal());
    JsonObject json = config.toJson();
    json.getJsonArray("engines").add(new JsonObject().put("iid", "X0").put("url", "http://127.0.0.1:9"));
    json.getJsonObject("cluster").getJsonArray("members").add("10.0.0.9");
    json.getJsonObject("server").getJsonObject("cors").getJsonArray("allowed_origins").add("https://a.example");
    assertEquals(2, config.toJson().getJsonArray("engines").size());
    assertEquals(1, config.cluster().members().size());
  }

  @Test
  void defaultConfFileRoundTrips() throws IOException {
    NarwhalConfig config = NarwhalConfig.parse(Files.readString(Path.of("..", "conf", "narwhal.json")));
    assertRoundTrips(config);
  }

  @Test
  void everyNonDefaultValueRoundTrips() {
    NarwhalConfig config = NarwhalConfig.parse("""
        {"schema": "narwhal.fleet", "schema_version": 1, "model": "meta-llama/Llama-3.1-8B",
         "engines": [
           {"iid": "B0", "url": "https://b0.local", "role": "both",
            "attestation_url": "https://b0.local/attest", "kv_side_channel": "[fd00::5]:5600"}],
         "engine_contract": {"vllm_version": "0.11.0", "kv_role": "kv_both", "block_size": 16},
         "server": {"host": "127.0.0.1", "port": 0},
         "serving": {"max_connections": 32, "max_request_bytes": 2048, "max_response_bytes": 4096,
           "request_timeout_s": 12.5, "prefill_timeout_s": 3, "max_attempts": 3, "retry_base_s": 0.25,
           "retry_cap_s": 0.25, "retry_budget": 0, "retry_replenish": 1, "graceful_timeout_s": 0,
           "drain_delay_s": 0},
         "engine": {"first_token_timeout_s": 0.75, "decode_read_timeout_s": 0, "connect_timeout_s": 1,
           "pool_timeout_s": 0.5, "health_timeout_s": 2, "kv_lease_s": 0, "connector": "nixl",
           "dialect": "vllm", "engine_api_key_env": "VLLM_API_KEY"},
         "recovery": {"eject_after": 1, "monitor_interval_s": 0.2, "readmit_every": 5,
           "liveness_every": 3, "liveness_misses": 4, "failure_quarantine_s": 45.5,
           "engine_restart_policy": "whole_wave"},
         "cluster": {"enabled": true, "name": "prod", "members": ["10.0.0.1", "10.0.0.2:5702"],
           "port": 5702, "host": "10.0.0.1"},
         "admin": {"token_env": "OPS_TOKEN"},
         "journal": {"path": "/var/log/narwhal/journal.jsonl", "max_bytes": 1048576, "keep": 3},
         "sim": {"embedded": true},
         "telemetry": {"otlp_endpoint": "http://collector:4318", "sample_ratio": 0.25, "service_name": "narwhal-eu"}}
        """);
    assertRoundTrips(config);
    assertEquals(new TelemetryConfig("http://collector:4318", 0.25, "narwhal-eu"), config.telemetry());
    assertEquals(750L, config.engine().firstTokenTimeoutMs());
    assertEquals(0L, config.engine().decodeReadTimeoutMs());
    assertEquals(45_500L, config.recovery().failureQuarantineMs());
    assertEquals(1000L, config.recovery().readmitIntervalMs());
    assertEquals(600L, config.recovery().livenessIntervalMs());
    assertEquals(12_500L, config.serving().requestTimeoutMs());
  }
}
