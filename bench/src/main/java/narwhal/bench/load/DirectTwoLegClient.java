package narwhal.bench.load;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.engines.client.DecodeCall;
import narwhal.engines.client.DecodeStream;
import narwhal.engines.client.EngineClient;
import narwhal.engines.client.EngineClientOptions;
import narwhal.engines.client.PrefillCall;
import narwhal.engines.connector.HandoffExpectations;
import narwhal.engines.sse.SseEvent;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The baseline of P1 and P4: a client that runs the two legs itself with {@link EngineClient} — prefill on a
 * producer, validated handoff, decode on a consumer — against the same engines the router uses, choosing
 * producer and consumer round-robin. A non-streaming request assembles the JSON answer from the decode stream,
 * as the router does. Must be started on a Vert.x context.
 */
public final class DirectTwoLegClient implements AutoCloseable {
  private final EngineClient engines;
  private final List<String> producers;
  private final List<String> consumers;
  private final String model;
  private final AtomicLong counter = new AtomicLong();

  public DirectTwoLegClient(Vertx vertx, List<String> producers, List<String> consumers, String model, int connectionsPerEngine) {
    this.engines = new EngineClient(vertx, new EngineClientOptions(10_000, connectionsPerEngine,
        EngineClientOptions.DEFAULT_MAX_RESPONSE_BYTES, EngineClientOptions.DEFAULT_MAX_EVENT_BYTES, () -> ""));
    this.producers = List.copyOf(producers);
    this.consumers = List.copyOf(consumers);
    this.model = model;
  }

  public Future<Exchange> run(String endpoint, JsonObject body, boolean stream) {
    long n = counter.getAndIncrement();
    String rid = "bench-direct-" + n;
    String producer = producers.get((int) (n % producers.size()));
    String consumer = consumers.get((int) (n % consumers.size()));
    long start = System.nanoTime();
    SseTimer timer = new SseTimer(start);
    StringBuilder text = stream ? null : new StringBuilder();
    PrefillCall prefill = new PrefillCall(producer, endpoint, body, model, rid + "-a1-prefill", 60_000, HandoffExpectations.nixlPull());
    return engines.prefill(prefill).compose(handoff -> {
      DecodeStream decode = engines.decode(handoff, new DecodeCall(consumer, endpoint, body, model, rid + "-a1-decode",
          producer.equals(consumer), 10_000, 10_000));
      decode.handler(event -> {
        if (event instanceof SseEvent.Output output) {
          if (text == null) timer.token(System.nanoTime());
          else text.append(output.text());
        }
      });
      return decode.end();
    }).map(end -> {
      if (text != null) {
        // What the router's JSON assembler does for a non-streaming client: one answer object, encoded.
        String answer = new JsonObject().put("id", rid).put("object", "text_completion").put("model", model)
            .put("choices", new JsonArray().add(new JsonObject().put("index", 0).put("text", text.toString())
                .put("finish_reason", end.finishReason())))
            .put("usage", end.usage()).encode();
        timer.token(System.nanoTime());
        if (answer.isEmpty()) throw new IllegalStateException("empty answer");
      }
      return Exchange.of(timer, System.nanoTime(), Exchange.Outcome.OK, 200, rid, null);
    }).recover(err -> Future.succeededFuture(Exchange.of(timer, System.nanoTime(), Exchange.Outcome.STREAM_ERROR, 0, rid,
        HttpWork.message(err))));
  }

  @Override
  public void close() {
    LoadGenerator.join(engines.close(), 10);
  }
}
