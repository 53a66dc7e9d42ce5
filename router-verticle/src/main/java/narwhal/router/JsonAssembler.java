package narwhal.router;

import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import narwhal.engines.client.DecodeEnd;
import narwhal.engines.sse.SseEvent;

/**
 * Answers a non-streaming client with the JSON the engine itself returns for {@code stream: false}, assembled from
 * the consumer's stream (decode is always streamed from the engine, for its timeouts) by {@link AnswerAssembly}.
 * Each frame's tree is the one the engine client read it into to classify it ({@code FrameUse.ASSEMBLY}, chosen by
 * the client's {@code stream}), not a second parse. A retried decode starts the assembly over.
 */
final class JsonAssembler implements ClientSink {
  private final HttpServerResponse response;
  private final boolean chat;
  private final String id;
  private final String model;
  private final String toolCallContent;
  private AnswerAssembly answer;
  private io.vertx.core.json.JsonArray promptLogprobs;
  private long outputLength;
  private final long created;
  private boolean outputSeen;
  /** Where a batch's part goes: its assembled answer, or its error ({@link PromptBatch}). */
  record Outcome(java.util.function.Consumer<JsonObject> answered, java.util.function.Consumer<EdgeError> failed) {
  }

  /** Where the answer goes instead of the client's response; null: the response gets it. */
  private final Outcome outcome;

  /**
   * @param answerId the answer's {@code id} ({@link ClientId})
   * @param created the answer's {@code created}: the request's arrival, in epoch seconds, as vLLM stamps it */
  JsonAssembler(HttpServerResponse response, boolean chat, String answerId, String model, Object toolChoice, long created) {
    this(response, chat, answerId, model, toolChoice, created, null);
  }

  /** @param outcome takes the assembled answer or the error instead of the response (null: the response gets them) */
  JsonAssembler(HttpServerResponse response, boolean chat, String answerId, String model, Object toolChoice, long created,
      Outcome outcome) {
    this.outcome = outcome;
    this.response = response;
    this.created = created;
    this.chat = chat;
    this.id = answerId;
    this.model = model;
    this.toolCallContent = AnswerAssembly.toolCallContent(toolChoice);
    this.answer = new AnswerAssembly(chat, toolCallContent);
  }

  @Override
  public void attemptStarted() {
    answer = new AnswerAssembly(chat, toolCallContent);
    outputLength = 0;
  }

  @Override
  public void reasoningField(String field) {
    answer.reasoningField(field);
  }

  /** vLLM places them in a completion's choice and at the top of a chat answer ({@link AnswerAssembly#body}). */
  @Override
  public void promptLogprobs(io.vertx.core.json.JsonArray promptLogprobs) {
    this.promptLogprobs = promptLogprobs;
  }

  @Override
  public void metadata(SseEvent.Metadata event) {
    answer.accept(event.frame().json());
  }

  @Override
  public void output(SseEvent.Output event) {
    outputSeen = true;
    outputLength += event.text().length();
    answer.accept(event.frame().json());
  }

  @Override
  public void complete(DecodeEnd end) {
    JsonObject body = answer.body(id, created, model, end.finishReason(), end.usage(), promptLogprobs);
    if (outcome != null) {
      outcome.answered().accept(body);
    } else if (!response.ended() && !response.closed()) {
      response.setStatusCode(200).putHeader("content-type", "application/json").end(body.toBuffer());
    }
  }

  @Override
  public void fail(EdgeError error) {
    outputLength = 0; // the client gets the error, none of the output assembled so far
    if (outcome != null) outcome.failed().accept(error); else error.send(response);
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
    return outputLength;
  }

  @Override
  public boolean congested(Runnable resume) {
    return false;
  }
}
