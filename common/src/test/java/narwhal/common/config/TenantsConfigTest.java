package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code tenants} and {@code flow}: what a file may say, defaults, and each refusal naming the key and the expectation. */
class TenantsConfigTest {

  private static NarwhalConfig parse(JsonObject extra) {
    JsonObject file = new JsonObject().put("model", "m")
        .put("engines", new JsonArray().add(new JsonObject().put("iid", "P0").put("url", "http://127.0.0.1:1")));
    extra.forEach(e -> file.put(e.getKey(), e.getValue()));
    return NarwhalConfig.parse(file.encode());
  }

  @Test
  void tenantsAreReadWithTheirDefaultsAndWrittenBackTheSame() {
    NarwhalConfig config = parse(new JsonObject().put("tenants", new JsonObject()
        .put("chat", new JsonObject().put("api_key_env", "CHAT_KEYS").put("class", "high").put("tokens_per_minute", 1000))
        .put("lab", new JsonObject()))
        .put("flow", new JsonObject().put("queue_timeout_s", 2.5).put("tenant_header", "x-team")));
    TenantConfig chat = config.tenants().get("chat");
    assertEquals(0, chat.rank());
    assertEquals(1000, chat.tokensPerMinute());
    assertEquals("tenants.chat.api_key_env", chat.apiKey().key());
    TenantConfig lab = config.tenants().get("lab");
    assertEquals("normal", lab.priorityClass());
    assertEquals(1, lab.weight());
    assertTrue(!lab.hasQuota());
    assertEquals("default", config.tenants().get("nobody").name(), "an unknown name is the fallback tenant");
    assertEquals(2500, config.flow().queueTimeoutMs());
    assertEquals(config, NarwhalConfig.fromJson(config.toJson()), "written and read back the same");
    assertTrue(parse(new JsonObject()).tenants().isEmpty(), "no tenants section: none");
    assertEquals(FlowConfig.defaults(), parse(new JsonObject()).flow());
  }

  @Test
  void eachBadTenantIsRefusedNamingItsKey() {
    refused(new JsonObject().put("a", new JsonObject().put("class", "urgent")), "tenants.a.class", "\"high\"");
    refused(new JsonObject().put("a", new JsonObject().put("requests_per_minute", -1)), "tenants.a.requests_per_minute", "0");
    refused(new JsonObject().put("a", new JsonObject().put("weight", 0)), "tenants.a.weight", "1");
    refused(new JsonObject().put("a", new JsonObject().put("quota", 5)), "tenants.a.quota", "unknown");
    refused(new JsonObject().put("a", new JsonObject().put("api_key_env", "K").put("api_key_file", "/k")), "tenants.a.api_key_file", "one file or one variable");
    refused(new JsonObject().put("bad name!", new JsonObject()), "tenants.bad name!", "tenant name");
    refused(new JsonObject().put("a", "gold"), "tenants.a", "an object");
    JsonObject many = new JsonObject();
    for (int i = 0; i <= TenantsConfig.MAX_TENANTS; i++) many.put("t" + i, new JsonObject());
    refused(many, "tenants", "at most 256");
    ConfigException e = assertThrows(ConfigException.class, () -> parse(new JsonObject().put("tenants", new JsonArray())));
    assertEquals("tenants", e.key());
  }

  @Test
  void badFlowValuesAreRefusedNamingTheirKey() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> parse(new JsonObject().put("flow", new JsonObject().put("queue_timeout_s", 0))));
    assertEquals("flow.queue_timeout_s", e.key());
    e = assertThrows(ConfigException.class, () -> parse(new JsonObject().put("flow", new JsonObject().put("tenant_header", "x team"))));
    assertEquals("flow.tenant_header", e.key());
    e = assertThrows(ConfigException.class, () -> parse(new JsonObject().put("flow", new JsonObject().put("max_queued", 0))));
    assertEquals("flow.max_queued", e.key());
  }

  private static void refused(JsonObject tenants, String key, String expectation) {
    ConfigException e = assertThrows(ConfigException.class, () -> parse(new JsonObject().put("tenants", tenants)), key);
    assertEquals(key, e.key(), e.getMessage());
    assertTrue(e.getMessage().contains(expectation), e.getMessage());
  }
}
