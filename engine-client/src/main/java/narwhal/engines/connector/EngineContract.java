package narwhal.engines.connector;

import io.vertx.core.json.JsonObject;

import java.util.Locale;

/**
 * Compares an engine's attestation ({@code GET /attestation}) with the pinned {@code engine_contract}. Pinned
 * keys name attestation facts; {@code vllm_version}, {@code connector}, {@code kv_role} and {@code transfer_mode}
 * are read from where vLLM reports them.
 */
public final class EngineContract {
  private EngineContract() {
  }

  /** The first pinned fact the attestation contradicts, as a readable line; null when all match or nothing is pinned. */
  public static String mismatch(JsonObject contract, JsonObject attestation) {
    if (contract == null) return null;
    JsonObject kv = attestation.getJsonObject("kv_transfer_config", new JsonObject());
    JsonObject extra = kv.getJsonObject("kv_connector_extra_config", new JsonObject());
    for (String key : contract.fieldNames()) {
      Object pinned = contract.getValue(key);
      Object actual = switch (key) {
        case "vllm_version" -> attestation.getValue("version");
        case "connector" -> kv.getValue("kv_connector") instanceof String c ? connectorFamily(c) : null;
        case "kv_role" -> kv.getValue("kv_role");
        case "transfer_mode" -> extra.getValue("transfer_mode");
        default -> attestation.getValue(key);
      };
      if (!String.valueOf(pinned).equals(String.valueOf(actual))) return key + " is " + actual + ", contract pins " + pinned;
    }
    return null;
  }

  /**
   * What one engine is held to: a pinned {@code model} becomes the engine's own model (a fleet of several
   * models pins everything else once); null stays null.
   */
  public static JsonObject forModel(JsonObject contract, String model) {
    if (contract == null || !contract.containsKey("model") || model == null || model.isEmpty()) return contract;
    return contract.copy().put("model", model);
  }

  /** "NixlConnector" → "nixl", the family name the fleet file uses. */
  public static String connectorFamily(String connectorClass) {
    String lower = connectorClass.toLowerCase(Locale.ROOT);
    return lower.endsWith("connector") ? lower.substring(0, lower.length() - "connector".length()) : lower;
  }
}
