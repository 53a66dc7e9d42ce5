package narwhal.router;

import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.sse.SseEvent;

/**
 * Assembles a non-streaming client's JSON answer from the consumer's stream (decode is always streamed from
 * the engine): the text joined, the last {@code finish_reason}, the engine's {@code usage}.
 */
final class JsonAssembler implements ClientSink {
  private final HttpServerResponse response;
  private final boolean chat;
  private final String id;
  private final String model;
  private final StringBuilder text = new StringBuilder();
  private boolean outputSeen;

  JsonAssembler(HttpServerResponse response, boolean chat, String rid, String model) {
    this.response = response;
    this.chat = chat;
    this.id = (chat ? "chatcmpl-" : "cmpl-") + rid;
    this.model = model;
  }

  @Override
  public void metadata(SseEvent.Metadata event) {
  }

  @Override
  public void output(SseEvent.Output event) {
    outputSeen = true;
    text.append(event.text());
  }

  @Override
  public void complete(DecodeEnd end) {
    JsonObject choice = new JsonObject().put("index", 0);
    if (chat) {
      choice.put("message", new JsonObject().put("role", "assistant").put("content", text.toString()));
    } else {
      choice.put("text", text.toString());
    }
    choice.put("logprobs", (Object) null).put("finish_reason", end.finishReason()).put("stop_reason", (Object) null);
    JsonObject body = new JsonObject().put("id", id).put("object", chat ? "chat.completion" : "text_completion")
        .put("created", System.currentTimeMillis() / 1000).put("model", model).put("choices", new JsonArray().add(choice))
        .put("usage", end.usage());
    if (!response.ended() && !response.closed()) {
      response.setStatusCode(200).putHeader("content-type", "application/json").end(body.toBuffer());
    }
  }

  @Override
  public void fail(EdgeError error) {
    error.send(response);
  }

  /** Nothing is committed to a non-streaming client before the whole answer exists, so retries stay possible. */
  @Override
  public boolean committed() {
    return false;
  }

  boolean outputSeen() {
    return outputSeen;
  }

  @Override
  public long outputLength() {
    return text.length();
  }

  @Override
  public boolean congested(Runnable resume) {
    return false;
  }
}
