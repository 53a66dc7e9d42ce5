package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;

/**
 * What a finished prefill leaves behind: the blocks covering its prompt are held for a decode
 * engine to pull (the rest are freed), and the response gets a {@code kv_transfer_params}
 * descriptor naming them — shaped, or withheld, by any descriptor or lease fault the request carries.
 */
final class PrefillHandoff {

  private PrefillHandoff() {
  }

  /**
   * Holds or frees {@code blocks} and returns the descriptor (null for {@code descriptor_missing}); {@code hashes}
   * are the prefix-cache keys of the full prompt blocks, which join the cache when the blocks are released.
   */
  static JsonObject issue(SimEngine engine, CompletionRequest req, int[] blocks, long[] hashes, FaultRule fault) {
    int keep = Math.min(blocks.length, CompletionRequest.blocksFor(req.promptTokens, engine.config().getBlockSize()));
    int[] kept = Arrays.copyOf(blocks, keep);
    int[] rest = Arrays.copyOfRange(blocks, keep, blocks.length);
    String remoteRequestId = req.internalId + "-" + String.format("%08x", ThreadLocalRandom.current().nextInt());
    JsonObject descriptor = Descriptors.nixl(engine, remoteRequestId, kept, req.promptTokens);
    InjectedFault kind = fault == null ? null : fault.type();
    boolean held = true;
    if (kind == InjectedFault.DESCRIPTOR_MISSING) {
      descriptor = null;
      held = false;
    } else if (kind == InjectedFault.DESCRIPTOR_NO_ENGINE_ID) {
      descriptor.remove("remote_engine_id");
    } else if (kind == InjectedFault.DESCRIPTOR_BAD_BLOCK_IDS) {
      descriptor.put("remote_block_ids", Descriptors.badBlockIds(fault.stringParam("variant", "strings"), kept));
    } else if (kind == InjectedFault.DESCRIPTOR_FOREIGN_CONNECTOR) {
      descriptor = Descriptors.foreign(engine, fault.stringParam("variant", "mooncake"), remoteRequestId);
      held = false;
    } else if (kind == InjectedFault.DESCRIPTOR_WRONG_SIDE_CHANNEL) {
      descriptor.put("remote_port", engine.deadPort());
    }
    if (held) {
      engine.handoffs().hold(remoteRequestId, kept, hashes, kind == InjectedFault.LEASE_EXPIRY);
      engine.blocks().free(rest);
    } else {
      for (int i = 0; i < hashes.length && i < blocks.length; i++) {
        engine.blocks().register(blocks[i], hashes[i]);
      }
      engine.blocks().free(blocks);
    }
    return descriptor;
  }

  static JsonArray blockIdList(int[] ids) {
    JsonArray list = new JsonArray();
    for (int id : ids) {
      list.add(id);
    }
    return list;
  }
}
