package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code discovery.kubernetes}: what a file may say, and each refusal naming the key, the value and what was expected. */
class DiscoveryConfigTest {

  private static NarwhalConfig parse(JsonObject kubernetes, boolean withEngines) {
    JsonObject file = new JsonObject().put("model", "m").put("discovery", new JsonObject().put("kubernetes", kubernetes));
    if (withEngines) {
      file.put("engines", new io.vertx.core.json.JsonArray().add(new JsonObject().put("iid", "P0").put("url", "http://127.0.0.1:1")));
    }
    return NarwhalConfig.parse(file.encode());
  }

  @Test
  void aFileWithDiscoveryNeedsNoEnginesOfItsOwn() {
    NarwhalConfig config = parse(new JsonObject().put("enabled", true).put("decode_selector", "app=vllm,narwhal.io/role=decode")
        .put("port", "http").put("kv_side_channel_port", "nixl"), false);
    assertTrue(config.engines().isEmpty());
    assertEquals("app=vllm,narwhal.io/role=decode", config.discovery().kubernetes().selectors().get(Role.DECODE));
    assertEquals(config, NarwhalConfig.fromJson(config.toJson()), "written and read back the same");
  }

  @Test
  void withoutDiscoveryAFileStillNeedsEngines() {
    ConfigException e = assertThrows(ConfigException.class, () -> parse(new JsonObject(), false));
    assertEquals("engines", e.key());
  }

  @Test
  void eachBadValueIsRefusedNamingItsKey() {
    refused(new JsonObject().put("enabled", true), "discovery.kubernetes.prefill_selector", "at least one of");
    refused(new JsonObject().put("prefill_selector", "app=vllm;rm -rf"), "discovery.kubernetes.prefill_selector", "label selector");
    refused(new JsonObject().put("port", "70000"), "discovery.kubernetes.port", "container port");
    refused(new JsonObject().put("port", "HTTP_PORT"), "discovery.kubernetes.port", "container port");
    refused(new JsonObject().put("kv_side_channel_port", "0"), "discovery.kubernetes.kv_side_channel_port", "container port");
    refused(new JsonObject().put("namespace", "Not_A_Namespace"), "discovery.kubernetes.namespace", "namespace");
    refused(new JsonObject().put("api_url", "kubernetes.default"), "discovery.kubernetes.api_url", "http(s)://");
    refused(new JsonObject().put("model_label", "a b"), "discovery.kubernetes.model_label", "annotation or label key");
    refused(new JsonObject().put("enabled", "yes"), "discovery.kubernetes.enabled", "true or false");
  }

  private static void refused(JsonObject kubernetes, String key, String expectation) {
    ConfigException e = assertThrows(ConfigException.class, () -> parse(kubernetes, true), kubernetes.encode());
    assertEquals(key, e.key(), e.getMessage());
    assertTrue(e.getMessage().contains(expectation), e.getMessage());
  }
}
