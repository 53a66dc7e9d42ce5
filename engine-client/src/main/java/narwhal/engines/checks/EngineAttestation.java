package narwhal.engines.checks;

import io.vertx.core.json.JsonObject;
import narwhal.common.config.EngineConfig;
import narwhal.engines.connector.EngineContract;

/**
 * What an engine attests about itself ({@code GET /attestation}) that the router acts on: its KV lease (bounds a
 * handoff's age), its KV side channel (a descriptor must name it; a pinned {@code kv_side_channel} wins) and its
 * connector family. Null fields are unknown.
 */
public record EngineAttestation(JsonObject json, Double kvLeaseS, String sideChannel, String connector) {

  static EngineAttestation of(EngineConfig engine, JsonObject json) {
    JsonObject kv = json.getValue("kv_transfer_config") instanceof JsonObject o ? o : new JsonObject();
    JsonObject extra = kv.getValue("kv_connector_extra_config") instanceof JsonObject o ? o : new JsonObject();
    Double lease = extra.getValue("kv_lease_duration") instanceof Number n ? n.doubleValue() : null;
    JsonObject side = json.getValue("kv_side_channel") instanceof JsonObject o ? o : null;
    String sideChannel = !engine.kvSideChannel().isEmpty() ? engine.kvSideChannel()
        : side != null && side.getValue("host") != null ? side.getValue("host") + ":" + side.getValue("port") : null;
    String connector = kv.getValue("kv_connector") instanceof String c ? EngineContract.connectorFamily(c) : null;
    return new EngineAttestation(json, lease, sideChannel, connector);
  }

  /** The first fact that contradicts the pinned contract, or null when it matches or nothing is pinned. */
  public String mismatch(JsonObject contract) {
    return EngineContract.mismatch(contract, json);
  }
}
