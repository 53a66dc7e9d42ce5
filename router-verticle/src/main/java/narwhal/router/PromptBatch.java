package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.engines.client.DecodeCall;
import narwhal.engines.client.DecodeEnd;
import narwhal.router.telemetry.RequestTrace;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.function.Function;

/**
 * A completions request with several prompts (a list of strings or of token lists), served as vLLM serves it
 * (docs/vllm.md#batched-prompts): vLLM answers a batched prefill with one handoff descriptor, the first prompt's, so
 * each prompt runs its own prefill → decode as a part, a {@link RequestLifecycle} of its own (reservations, context
 * check, attempts and retries, journal row {@code <rid>-<i>}) under the request's deadline and its one admission. The
 * client gets one answer: choices indexed by prompt and usage summed, assembled or streamed with the parts' chunks
 * interleaved. The first part that fails ends the request with its error; the others are abandoned. No part sends a
 * leg before every prompt is known to fit the context: vLLM refuses such a batch whole before any work, and a part
 * abandoned after its prefill would leave its KV blocks to the producer's lease. At most
 * {@code serving.batch_parallelism} parts run their legs at once, in prompt order: a batch of hundreds of prompts all
 * at once filled the consumers' queues (503 for the whole batch) and left every prefilled part's KV to the lease; and
 * each running part's attempt takes its turn under the replica's {@code serving.max_legs_in_flight} ({@link Admission}).
 * A batch costs linear time and memory: each part's body is the request's body without its prompts, shared, plus its
 * own prompt (a copy of the whole body per prompt made 10,000 prompts quadratic), and parts start a few hundred per
 * turn of the event loop. At most {@code serving.max_batch_prompts} prompts, checked at the edge.
 */
final class PromptBatch {
  private final RouterContext ctx;
  private final InferenceRequest request;
  private final JsonArray prompts;
  private final Function<JsonObject, String> affinity;
  private final Runnable onFinish;
  /** How many parts start in one turn of the event loop ({@link #startParts}). */
  private static final int PARTS_PER_TURN = 256;
  /** The request's body without its prompts, shared by every part's body (its values are never modified). */
  private final Map<String, Object> shared;
  /** The parts started so far, in prompt order. */
  private final List<RequestLifecycle> parts = new ArrayList<>();
  private final JsonObject[] answers;
  private final JsonObject[] usages;
  private final String answerId;
  private SseRelay relay;
  /** Completes when every part's prompt fits the context; fails when the batch ended before. */
  private final Promise<Void> allFit = Promise.promise();
  private int fittedParts;
  /** Parts running their legs now, and those whose prompts fit waiting for a turn, in prompt order. */
  private final int parallelism;
  private int running;
  private final boolean[] runningPart;
  private final java.util.ArrayDeque<Turn> waiting = new java.util.ArrayDeque<>();
  private int completedParts;
  private int finishedParts;
  private boolean ended;

  /**
   * @param affinity what keeps a part's body near related requests ({@link PromptAffinity})
   * @param onFinish run once, when every part has ended
   */
  PromptBatch(RouterContext ctx, InferenceRequest request, String answerId, JsonArray prompts,
      Function<JsonObject, String> affinity, Runnable onFinish) {
    this.ctx = ctx;
    this.request = request;
    this.answerId = answerId;
    this.prompts = prompts;
    this.affinity = affinity;
    this.onFinish = onFinish;
    this.answers = new JsonObject[prompts.size()];
    this.usages = new JsonObject[prompts.size()];
    this.parallelism = ctx.config().get().serving().batchParallelism();
    this.runningPart = new boolean[prompts.size()];
    this.shared = new LinkedHashMap<>(request.body().getMap());
    shared.remove("prompt");
  }

  /** A part whose prompt fits, waiting for one of the batch's turns. */
  private record Turn(int index, Promise<Void> go) {
  }

  void start() {
    if (request.stream()) relay = new SseRelay(request.response(), ctx.endOfTurn(), answerId);
    request.response().closeHandler(v -> {
      // ended first: a running part cancelled here would otherwise hand its turn to a waiting part, which would send
      // its prefill before its own cancellation, and so on through every waiting part of the batch
      ended = true;
      List.copyOf(parts).forEach(RequestLifecycle::cancelled);
      stopWaiting(new CancellationException("the client went away"));
    });
    startParts(ctx.vertx().getOrCreateContext());
  }

  /**
   * Starts the next {@link #PARTS_PER_TURN} parts, then lets the event loop serve others before the next ones: a batch
   * of thousands of prompts does not hold the loop for all of its parts at once. Once the batch has ended the parts
   * not yet started count as finished without ever starting.
   */
  private void startParts(io.vertx.core.Context context) {
    int until = Math.min(prompts.size(), parts.size() + PARTS_PER_TURN);
    while (parts.size() < until && !ended) {
      RequestLifecycle part = part(parts.size());
      parts.add(part);
      part.startPart();
    }
    if (ended && parts.size() < prompts.size()) {
      finishedParts += prompts.size() - parts.size();
      if (finishedParts == prompts.size()) onFinish.run();
      return;
    }
    if (parts.size() < prompts.size()) context.runOnContext(v -> startParts(context));
  }

  /** Prompt {@code index}'s part: the request's body without its prompts, shared, with this prompt as its own. */
  private RequestLifecycle part(int index) {
    JsonObject body = new JsonObject(new LinkedHashMap<>(shared)).put("prompt", partPrompt(prompts.getValue(index)));
    InferenceRequest part = new InferenceRequest(request.rid() + "-" + index, request.clientRid(), request.endpoint(), false, body,
        request.stream(), request.response(), request.arrived(), request.arrivedNanos(), affinity.apply(body), request.model(),
        request.lane());
    ClientSink sink = relay != null ? relay.part(index, end -> streamed(index, end), error -> failed(index, error))
        : new JsonAssembler(request.response(), false, answerId, request.model(), null, request.arrived().getEpochSecond(),
            new JsonAssembler.Outcome(answer -> answered(index, answer), error -> failed(index, error)));
    RequestLifecycle lifecycle = new RequestLifecycle(ctx, part, sink, () -> partFinished(index), RequestTrace.OFF);
    lifecycle.gateAfterFit(() -> fitted(index));
    return lifecycle;
  }

  /**
   * One prompt of the batch as its part's own {@code prompt}: a token-id list with its ids as integers. vLLM reads
   * {@code [["5", "6"]]} as one prompt of token ids 5 and 6 (pydantic's lax integers), but {@code ["5", "6"]} alone as
   * two text prompts, a batch again.
   */
  private static Object partPrompt(Object prompt) {
    if (!(prompt instanceof JsonArray ids)) return prompt;
    JsonArray out = new JsonArray();
    for (Object id : ids) out.add(LaxNumbers.integer(id));
    return out;
  }

  /** A part's prompt fits: its legs wait for the other prompts' verdicts, then for a turn. */
  private Future<Void> fitted(int index) {
    if (++fittedParts == prompts.size()) allFit.tryComplete();
    return allFit.future().compose(v -> turn(index));
  }

  private Future<Void> turn(int index) {
    if (ended) return Future.failedFuture(new CancellationException("the batch ended"));
    if (running < parallelism) {
      running++;
      runningPart[index] = true;
      return Future.succeededFuture();
    }
    Promise<Void> go = Promise.promise();
    waiting.add(new Turn(index, go));
    return go.future();
  }

  /** A part ended: its turn goes to the next waiting part. */
  private void nextTurns() {
    while (running < parallelism && !waiting.isEmpty() && !ended) {
      Turn next = waiting.poll();
      running++;
      runningPart[next.index()] = true;
      next.go().complete();
    }
  }

  /** The batch ended: no part waiting for the others' verdicts or for a turn starts a leg. */
  private void stopWaiting(CancellationException why) {
    allFit.tryFail(why);
    List<Turn> left = List.copyOf(waiting);
    waiting.clear();
    left.forEach(t -> t.go().tryFail(why));
  }

  private void answered(int index, JsonObject answer) {
    answers[index] = answer;
    usages[index] = answer.getJsonObject("usage");
    if (ended || ++completedParts < answers.length) return;
    ended = true;
    JsonObject body = answers[0].copy();
    JsonArray choices = new JsonArray();
    for (int i = 0; i < answers.length; i++) choices.add(answers[i].getJsonArray("choices").getJsonObject(0).copy().put("index", i));
    body.put("choices", choices).put("usage", summed(true));
    if (!request.response().ended() && !request.response().closed()) {
      request.response().setStatusCode(200).putHeader("content-type", "application/json").end(body.toBuffer());
    }
  }

  private void streamed(int index, DecodeEnd end) {
    usages[index] = end.usage();
    if (ended || ++completedParts < usages.length) return;
    ended = true;
    relay.completeBatch(DecodeCall.clientAsksUsage(request.body()) ? summed(false) : null, request.arrived().getEpochSecond(),
        request.model());
  }

  private void failed(int index, EdgeError error) {
    if (ended) return;
    ended = true;
    if (relay != null) relay.fail(error); else error.send(request.response());
    for (int i = 0; i < parts.size(); i++) {
      if (i != index) parts.get(i).abandon();
    }
    // after the parts ended: a part waiting for the others' verdicts or a turn then finds itself done
    stopWaiting(new CancellationException("another prompt of the batch failed"));
  }

  private void partFinished(int index) {
    if (runningPart[index]) {
      runningPart[index] = false;
      running--;
      nextTurns();
    }
    if (++finishedParts == prompts.size()) onFinish.run();
  }

  /**
   * The parts' usage added up as vLLM adds a batch's: prompt, completion and total tokens; cached prompt tokens when
   * any part had some; {@code details}: a non-streamed body, which spells out a null {@code prompt_tokens_details}.
   */
  private JsonObject summed(boolean details) {
    long prompt = 0;
    long completion = 0;
    long cached = 0;
    for (JsonObject u : usages) {
      if (u == null) continue;
      prompt += u.getValue("prompt_tokens") instanceof Number n ? n.longValue() : 0;
      completion += u.getValue("completion_tokens") instanceof Number n ? n.longValue() : 0;
      if (u.getValue("prompt_tokens_details") instanceof JsonObject d && d.getValue("cached_tokens") instanceof Number n) {
        cached += n.longValue();
      }
    }
    JsonObject usage = new JsonObject().put("prompt_tokens", prompt).put("total_tokens", prompt + completion)
        .put("completion_tokens", completion);
    if (cached > 0) return usage.put("prompt_tokens_details", new JsonObject().put("cached_tokens", cached));
    return details ? usage.put("prompt_tokens_details", null) : usage;
  }
}
