package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;
import java.util.stream.IntStream;

/**
 * Clients of a router under test: completions, streamed or not, sent one after the other until told to stop, every
 * status recorded (599: a stream that ended in an error, or no answer at all). The load the engine-moving tests keep
 * running while they move engines.
 */
final class CompletionClients {
  private final Vertx vertx;
  private final HttpClientAgent http;
  private final IntSupplier port;
  final List<Integer> statuses = new CopyOnWriteArrayList<>();

  CompletionClients(Vertx vertx, IntSupplier port) {
    this.vertx = vertx;
    this.http = vertx.createHttpClient();
    this.port = port;
  }

  /** One completion of {@code maxTokens}; its status, 599 for a stream that did not end in {@code [DONE]} cleanly. */
  Future<Integer> completion(boolean stream, int maxTokens) {
    JsonObject body = new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "The narwhal moves").put("max_tokens", maxTokens)
        .put("ignore_eos", true).put("stream", stream);
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(port.getAsInt())
        .setURI("/v1/completions").putHeader("content-type", "application/json");
    return Future.<Integer>future(p -> vertx.runOnContext(v -> http.request(options).compose(req -> req.send(body.toBuffer()))
        .compose(resp -> resp.body().map(b -> resp.statusCode() != 200 ? resp.statusCode()
            : stream && (!b.toString().contains("[DONE]") || b.toString().contains("\"error\"")) ? 599 : 200))
        .otherwise(599).onComplete(p)));
  }

  /** {@code clients} clients until {@code stop}; completes when all have stopped. */
  Future<Void> load(AtomicBoolean stop, int clients) {
    return Future.<Void>future(done -> vertx.runOnContext(v ->
        Future.all(IntStream.range(0, clients).mapToObj(i -> loop(stop, i)).toList()).<Void>mapEmpty().onComplete(done)));
  }

  /** The statuses other than 200 so far. */
  List<Integer> failures() {
    return statuses.stream().filter(s -> s != 200).toList();
  }

  private Future<Void> loop(AtomicBoolean stop, int n) {
    if (stop.get()) return Future.succeededFuture();
    return completion(n % 2 == 0, 6).compose(status -> {
      statuses.add(status);
      return loop(stop, n + 1);
    });
  }
}
