package narwhal.router;

import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.ConfigException;
import narwhal.common.config.ConfigKeys;
import narwhal.common.config.ConfigOverrides;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * docs/configuration.md lists exactly the keys the config classes declare ({@link ConfigKeys}), with the type, default,
 * hot-reload column and override names of each declaration, and the retired keys in its migration table. A key added
 * to the code without its line in the page (or the other way round) fails here.
 */
class ConfigurationDocTest {
  private static final String PAGE = "configuration.md";
  private static final JsonObject MINIMAL = new JsonObject().put("model", "m")
      .put("engines", new JsonArray().add(new JsonObject().put("iid", "e0").put("url", "http://127.0.0.1:9")));

  @Test
  void everyKeyOfTheCodeHasItsLineAndNoOtherLineExists() {
    Set<String> codeKeys = new TreeSet<>();
    ConfigKeys.all().forEach((name, key) -> {
      if (!key.retired()) codeKeys.add(name);
    });
    assertEquals(codeKeys, documented().keySet(), "keys of the config classes (left) vs rows of docs/" + PAGE + " (right)");
  }

  @Test
  void everyRowHasTheDeclaredType() {
    documented().forEach((name, row) ->
        assertEquals(ConfigKeys.get(name).type().docName(), row.get("type"), name + ": type column"));
  }

  @Test
  void everyRetiredKeyHasItsMigrationRow() {
    Set<String> retired = new TreeSet<>();
    ConfigKeys.all().forEach((name, key) -> {
      if (key.retired()) retired.add(name);
    });
    Set<String> rows = new TreeSet<>();
    for (Map<String, String> row : DocPages.rows(PAGE, "old key")) rows.add(DocPages.code(row.get("old key")).get(0));
    assertEquals(retired, rows, "retired keys (left) vs the migration table of docs/" + PAGE + " (right)");
  }

  @Test
  void everyDocumentedDefaultIsTheCodesDefault() {
    Map<String, Object> defaults = new TreeMap<>();
    JsonObject json = NarwhalConfig.fromJson(MINIMAL).toJson();
    flatten(json, "", defaults);
    JsonObject engine = json.getJsonArray("engines").getJsonObject(0);
    flatten(engine, "engines[].", defaults);
    flatten(narwhal.common.config.TenantConfig.fallback("t").toJson(), narwhal.common.config.ConfigKeys.TENANT_ENTRY, defaults);
    documented().forEach((key, row) -> {
      String cell = row.get("default");
      if (cell.startsWith("required")) {
        assertRequired(key);
      } else if (cell.startsWith("the top-level `model`")) {
        assertEquals(json.getString("model"), defaults.get(key), key + ": the top-level model");
      } else if (cell.contains("available processors")) {
        assertEquals(Runtime.getRuntime().availableProcessors(), defaults.get(key), key + ": the processors' count");
      } else {
        assertTrue(defaults.containsKey(key), key + " has no default in the code");
        String value = DocPages.code(cell).stream().findFirst().orElseThrow(() -> new AssertionError(key + ": default not in backticks"));
        assertSameValue(key, defaults.get(key), Json.decodeValue(value));
      }
    });
  }

  @Test
  void everyOverridableKeyNamesItsEnvironmentAndSetOverride() {
    documented().forEach((key, row) -> {
      if (!ConfigOverrides.keys().contains(key)) {
        assertEquals("file only", row.get("override"), key + ": not overridable");
        return;
      }
      String env = ConfigOverrides.envName(key);
      assertTrue(DocPages.code(row.get("override")).containsAll(java.util.List.of(env, "--set " + key + "=…")),
          key + ": override column names " + env + " and --set " + key + "=…");
    });
  }

  @Test
  void theKeysDocumentedAsReadAtStartAreTheOnesAReloadReportsAsPending() {
    documented().forEach((key, row) -> {
      String reload = row.getOrDefault("hot reload", "");
      boolean docStartOnly = reload.startsWith("no");
      assertEquals(docStartOnly, narwhal.common.config.StartOnlyKeys.startOnly(key),
          key + ": docs/" + PAGE + " says \"" + reload + "\"; StartOnlyKeys must agree");
    });
  }

  private static Map<String, Map<String, String>> documented() {
    Map<String, Map<String, String>> rows = new TreeMap<>();
    for (Map<String, String> row : DocPages.rows(PAGE, "key")) {
      String key = DocPages.code(row.get("key")).get(0);
      if (rows.put(key, row) != null) fail(key + " has two rows in docs/" + PAGE);
    }
    return rows;
  }

  private static void flatten(JsonObject json, String prefix, Map<String, Object> out) {
    json.forEach(e -> {
      if (e.getValue() instanceof JsonObject nested && !e.getKey().equals("engine_contract") && !nested.isEmpty()) {
        flatten(nested, prefix + e.getKey() + ".", out);
      }
      else out.put(prefix + e.getKey(), e.getValue());
    });
  }

  /** A row marked required: the minimal fleet file without that key is refused, naming it. */
  private static void assertRequired(String key) {
    JsonObject json = MINIMAL.copy();
    if (key.startsWith("engines[].")) json.getJsonArray("engines").getJsonObject(0).remove(key.substring("engines[].".length()));
    else json.remove(key);
    ConfigException e = assertThrows(ConfigException.class, () -> NarwhalConfig.fromJson(json), key + " is documented as required");
    assertTrue(e.getMessage().contains(key.replace("engines[]", "engines")) || e.getMessage().contains(key.substring(key.lastIndexOf('.') + 1)),
        e.getMessage());
  }

  private static void assertSameValue(String key, Object code, Object doc) {
    if (code instanceof Number a && doc instanceof Number b) {
      assertEquals(0, new BigDecimal(a.toString()).compareTo(new BigDecimal(b.toString())), key + ": code " + a + ", page " + b);
    } else {
      assertEquals(code, doc, key + ": default in code vs page");
    }
  }
}
