package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The {@code kv_transfer_params} a prefill returns: vLLM's NIXL pull-mode descriptor (section 1.3
 * of the protocol reference), and the malformed or foreign shapes the descriptor faults produce.
 */
final class Descriptors {

  private Descriptors() {
  }

  static JsonObject nixl(SimEngine engine, String remoteRequestId, int[] blocks, int promptTokens) {
    JsonArray ids = PrefillHandoff.blockIdList(blocks);
    return new JsonObject()
      .put("do_remote_prefill", true)
      .put("do_remote_decode", false)
      .put("remote_block_ids", engine.config().isFlatBlockIds() ? ids : new JsonArray().add(ids))
      .put("remote_engine_id", engine.engineId())
      .put("remote_request_id", remoteRequestId)
      .put("remote_host", engine.advertisedHost())
      .put("remote_port", engine.sideChannelPort())
      .put("tp_size", 1)
      .put("dcp_size", 1)
      .put("pp_size", 1)
      .put("remote_num_tokens", promptTokens)
      .put("remote_blocks_expiry_time", null)
      .put("transfer_mode", "pull")
      .mergeIn(engine.config().getDescriptorExtras().copy());
  }

  /** Block ids of the wrong shape: strings, floats, booleans, negative, not a list, or a mix. */
  static Object badBlockIds(String variant, int[] blocks) {
    JsonArray inner = new JsonArray();
    int first = blocks.length == 0 ? 0 : blocks[0];
    int n = Math.max(2, blocks.length);
    switch (variant) {
      case "floats":
        for (int i = 0; i < n; i++) {
          inner.add((double) (first + i));
        }
        return new JsonArray().add(inner);
      case "booleans":
        for (int i = 0; i < n; i++) {
          inner.add(i % 2 == 0);
        }
        return new JsonArray().add(inner);
      case "negative":
        for (int i = 0; i < n; i++) {
          inner.add(-1 - i);
        }
        return new JsonArray().add(inner);
      case "not_list":
        return String.valueOf(first);
      case "mixed":
        return new JsonArray().add(new JsonArray().add(first).add(String.valueOf(first + 1)).add(true).add(1.5));
      case "strings":
      default:
        for (int i = 0; i < n; i++) {
          inner.add(String.valueOf(first + i));
        }
        return new JsonArray().add(inner);
    }
  }

  /** Another connector's handoff shape (Mooncake, SGLang bootstrap, LMCache disagg_spec). */
  static JsonObject foreign(SimEngine engine, String variant, String remoteRequestId) {
    String host = engine.advertisedHost();
    switch (variant) {
      case "sglang":
        return new JsonObject()
          .put("bootstrap_host", host)
          .put("bootstrap_port", 8998)
          .put("bootstrap_room", ThreadLocalRandom.current().nextLong(Long.MAX_VALUE));
      case "lmcache":
        return new JsonObject()
          .put("ret_first_tok", true)
          .put("disagg_spec", new JsonObject()
            .put("req_id", remoteRequestId)
            .put("receiver_host", host)
            .put("receiver_init_port", new JsonArray().add(7300))
            .put("receiver_alloc_port", new JsonArray().add(7400)));
      case "mooncake":
      default:
        return new JsonObject()
          .put("do_remote_prefill", true)
          .put("do_remote_decode", false)
          .put("transfer_id", "xfer-" + UUID.randomUUID())
          .put("remote_bootstrap_addr", "http://" + host + ":8998")
          .put("remote_engine_id", engine.engineId());
    }
  }
}
