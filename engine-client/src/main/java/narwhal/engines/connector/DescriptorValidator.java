package narwhal.engines.connector;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Optional;

/**
 * Checks a KV handoff descriptor before any decode request is made (docs/vllm.md#what-the-router-sends-and-expects). Returns the rejection
 * reason, or empty when the descriptor may be forwarded; it never changes the descriptor: every field it
 * does not judge travels on untouched. Reasons name no host, port or URL: they reach clients.
 */
public final class DescriptorValidator {
  private static final List<String> FOREIGN_CONNECTOR_FIELDS =
      List.of("transfer_id", "bootstrap_room", "bootstrap_host", "disagg_spec", "remote_bootstrap_addr");

  private DescriptorValidator() {
  }

  /** Checks the descriptor a producer returned ({@code kv_transfer_params} of the prefill response). */
  public static Optional<String> check(Object descriptor, HandoffExpectations expected) {
    if (!(descriptor instanceof JsonObject d)) return Optional.of("missing descriptor");
    for (String field : FOREIGN_CONNECTOR_FIELDS) {
      if (d.containsKey(field)) {
        return Optional.of("connector mismatch: descriptor carries " + field + ", which NIXL does not use");
      }
    }
    if (!(d.getValue("remote_engine_id") instanceof String id) || id.isBlank()) {
      return Optional.of("missing engine identity");
    }
    if (!validBlockIds(d.getValue("remote_block_ids"))) return Optional.of("malformed block ids");
    Object mode = d.getValue("transfer_mode");
    if (mode != null && !mode.equals(expected.transferMode())) {
      return Optional.of("connector mismatch: transfer_mode " + quote(mode) + ", expected " + quote(expected.transferMode()));
    }
    if (!expected.producerConnector().equals(expected.consumerConnector())) {
      return Optional.of("connector mismatch: producer uses " + expected.producerConnector()
          + ", consumer uses " + expected.consumerConnector());
    }
    String sideChannel = expected.producerSideChannel();
    if (sideChannel != null && !sideChannel.isEmpty()) {
      Object host = d.getValue("remote_host");
      Object port = d.getValue("remote_port");
      if (!(host instanceof String) || !(port instanceof Number) || !sideChannel.equals(host + ":" + ((Number) port).longValue())) {
        return Optional.of("endpoint mismatch: the descriptor's side channel is not the producer's attested KV side channel");
      }
    }
    return Optional.empty();
  }

  /** Checks that the decode goes to the endpoint the producer served. */
  public static Optional<String> checkEndpoint(PrefillResult result, String decodeEndpoint) {
    if (!result.endpoint().equals(decodeEndpoint)) {
      return Optional.of("endpoint mismatch: producer served " + result.endpoint() + ", decode targets " + decodeEndpoint);
    }
    return Optional.empty();
  }

  /** A list of non-negative integers, or a list of such lists (one per KV-cache group). */
  static boolean validBlockIds(Object value) {
    if (!(value instanceof JsonArray ids)) return false;
    if (ids.isEmpty()) return true;
    boolean nested = ids.getValue(0) instanceof JsonArray;
    for (Object item : ids) {
      if (nested ? !(item instanceof JsonArray inner && allBlockIds(inner)) : !isBlockId(item)) return false;
    }
    return true;
  }

  private static boolean allBlockIds(JsonArray ids) {
    for (Object item : ids) {
      if (!isBlockId(item)) return false;
    }
    return true;
  }

  private static boolean isBlockId(Object item) {
    return (item instanceof Integer || item instanceof Long) && ((Number) item).longValue() >= 0;
  }

  private static String quote(Object value) {
    return value instanceof String s ? "\"" + s + "\"" : String.valueOf(value);
  }
}
