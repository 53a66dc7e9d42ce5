package narwhal.engines.client;

import io.vertx.core.json.JsonObject;
import narwhal.engines.sse.FrameUse;

import java.util.Map;

/**
 * One decode leg to make. {@code sameWorker}: the consumer is the producer, so no transfer parameters are
 * sent at all. {@code firstTokenTimeoutMs} is one absolute budget from before the request opens to the first
 * output; {@code readTimeoutMs} bounds silence between chunks after it (0: unbounded here, the caller's
 * deadline bounds the stream). {@code headers} are sent besides the leg's own (the trace context).
 */
public record DecodeCall(String consumerUrl, String endpoint, JsonObject clientBody, String model,
                         String requestId, boolean sameWorker, long firstTokenTimeoutMs, long readTimeoutMs,
                         Map<String, String> headers) {

  public DecodeCall {
    headers = Map.copyOf(headers);
  }

  public DecodeCall(String consumerUrl, String endpoint, JsonObject clientBody, String model,
                    String requestId, boolean sameWorker, long firstTokenTimeoutMs, long readTimeoutMs) {
    this(consumerUrl, endpoint, clientBody, model, requestId, sameWorker, firstTokenTimeoutMs, readTimeoutMs, Map.of());
  }

  /**
   * What the leg's frames are read for: a non-streaming client ({@code stream} absent or false in its own body) is
   * answered with one JSON body assembled from them, a streaming one gets them relayed.
   */
  public FrameUse frameUse() {
    return Boolean.TRUE.equals(clientBody.getValue("stream")) ? FrameUse.RELAY : FrameUse.ASSEMBLY;
  }

  /**
   * Whether the client's own body asks for the usage chunk of a stream: a non-streaming client always gets usage;
   * a streaming one when it sent {@code stream_options} with {@code include_usage} absent (vLLM's default, true, once
   * the object is present) or true; {@code include_usage: null} asks nothing, as in vLLM.
   */
  public static boolean clientAsksUsage(JsonObject clientBody) {
    if (!Boolean.TRUE.equals(clientBody.getValue("stream"))) return true;
    return clientBody.getValue("stream_options") instanceof JsonObject options && includeUsage(options);
  }

  /** vLLM's reading of {@code stream_options.include_usage}: absent is its default (true), null and false are not asked. */
  public static boolean includeUsage(JsonObject streamOptions) {
    if (!streamOptions.containsKey("include_usage")) return true;
    Object value = streamOptions.getValue("include_usage");
    return value != null && !Boolean.FALSE.equals(value);
  }
}
