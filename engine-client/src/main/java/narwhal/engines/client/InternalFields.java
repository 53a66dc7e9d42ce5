package narwhal.engines.client;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;

/**
 * The one rule for the fields a client may never hand an engine (docs/vllm.md#what-a-client-cannot-send): vLLM copies a
 * body's {@code kv_transfer_params}, and every key of its {@code vllm_xargs}, into {@code SamplingParams.extra_args},
 * where the KV connector reads {@code kv_transfer_params} as the handoff to run (which host, port, engine and blocks
 * to pull). Every body {@link EngineClient} sends starts as {@link #forEngine} of the client's, so the only transfer
 * parameters an engine sees are the ones the router sets on its own legs.
 */
public final class InternalFields {
  /** The field vLLM's connectors read from {@code extra_args}, top-level in every OpenAI request class. */
  public static final String KV_TRANSFER_PARAMS = "kv_transfer_params";
  /** vLLM's pass-through of arbitrary keys into {@code extra_args}, read by the same request classes. */
  public static final String VLLM_XARGS = "vllm_xargs";

  private InternalFields() {
  }

  /**
   * A shallow copy of {@code body} (its top-level keys its own, nested values shared read-only) without a
   * {@code kv_transfer_params}, at the top level or inside {@code vllm_xargs}; the client's body is not changed.
   */
  public static JsonObject forEngine(JsonObject body) {
    JsonObject copy = copy(body);
    copy.remove(KV_TRANSFER_PARAMS);
    if (copy.getValue(VLLM_XARGS) instanceof JsonObject xargs && xargs.containsKey(KV_TRANSFER_PARAMS)) {
      JsonObject kept = copy(xargs);
      kept.remove(KV_TRANSFER_PARAMS);
      copy.put(VLLM_XARGS, kept);
    }
    return copy;
  }

  private static JsonObject copy(JsonObject body) {
    return new JsonObject(new LinkedHashMap<>(body.getMap()));
  }
}
