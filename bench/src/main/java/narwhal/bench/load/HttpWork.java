package narwhal.bench.load;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;

/**
 * One HTTP inference request as a client makes it, timed by {@link SseTimer}: a streaming answer is timed
 * per token as the chunks arrive; a JSON answer counts as one arrival at its end. A request that does not end
 * within {@code timeoutMs} is reset and reported as {@link Exchange.Outcome#TIMEOUT}; with
 * {@code cancelAfterTokens} ≥ 0 the client hangs up after that many tokens ({@link Exchange.Outcome#CANCELLED}).
 * Must be started on a Vert.x context.
 */
public final class HttpWork {
  private final Vertx vertx;
  private final HttpClientAgent client;
  private final String host;
  private final int port;
  private final java.util.Map<String, String> headers;

  public HttpWork(Vertx vertx, HttpClientAgent client, String host, int port) {
    this(vertx, client, host, port, java.util.Map.of());
  }

  private HttpWork(Vertx vertx, HttpClientAgent client, String host, int port, java.util.Map<String, String> headers) {
    this.vertx = vertx;
    this.client = client;
    this.host = host;
    this.port = port;
    this.headers = headers;
  }

  /** The same client sending {@code name: value} with every request as well (a tenant's key). */
  public HttpWork withHeader(String name, String value) {
    java.util.Map<String, String> more = new java.util.LinkedHashMap<>(headers);
    more.put(name, value);
    return new HttpWork(vertx, client, host, port, java.util.Map.copyOf(more));
  }

  public Future<Exchange> post(String path, Buffer body, boolean stream, long timeoutMs) {
    return post(path, body, stream, timeoutMs, -1);
  }

  public Future<Exchange> post(String path, Buffer body, boolean stream, long timeoutMs, int cancelAfterTokens) {
    long start = System.nanoTime();
    SseTimer timer = new SseTimer(start);
    Promise<Exchange> result = Promise.promise();
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost(host).setPort(port).setURI(path)
        .putHeader("content-type", "application/json");
    headers.forEach(options::putHeader);
    HttpClientRequest[] request = new HttpClientRequest[1];
    String[] rid = new String[1];
    int[] status = new int[1];
    long timeout = vertx.setTimer(timeoutMs, id -> {
      if (result.tryComplete(Exchange.of(timer, System.nanoTime(), Exchange.Outcome.TIMEOUT, status[0], rid[0],
          "no end within " + timeoutMs + " ms")) && request[0] != null) {
        request[0].reset();
      }
    });
    result.future().onComplete(ar -> vertx.cancelTimer(timeout));
    client.request(options).onComplete(ar -> {
      if (ar.failed()) {
        result.tryComplete(Exchange.failed(start, System.nanoTime(), Exchange.Outcome.TRANSPORT_ERROR, 0, null, message(ar.cause())));
        return;
      }
      request[0] = ar.result();
      if (result.future().isComplete()) {
        request[0].reset();
        return;
      }
      request[0].send(body).onComplete(rar -> {
        if (rar.failed()) {
          result.tryComplete(Exchange.of(timer, System.nanoTime(), Exchange.Outcome.TRANSPORT_ERROR, 0, null, message(rar.cause())));
          return;
        }
        HttpClientResponse resp = rar.result();
        status[0] = resp.statusCode();
        rid[0] = resp.getHeader("x-request-id");
        if (status[0] != 200 || !stream) {
          readWhole(resp, timer, result, status[0], rid[0]);
        } else {
          readStream(resp, request[0], timer, result, rid[0], cancelAfterTokens);
        }
      });
    });
    return result.future();
  }

  private static void readWhole(HttpClientResponse resp, SseTimer timer, Promise<Exchange> result, int status, String rid) {
    resp.body().onComplete(bar -> {
      long end = System.nanoTime();
      if (bar.failed()) {
        result.tryComplete(Exchange.of(timer, end, Exchange.Outcome.TRANSPORT_ERROR, status, rid, message(bar.cause())));
      } else if (status != 200) {
        result.tryComplete(Exchange.of(timer, end, Exchange.Outcome.HTTP_ERROR, status, rid, snippet(bar.result())));
      } else {
        timer.token(end);
        result.tryComplete(Exchange.of(timer, end, Exchange.Outcome.OK, status, rid, null));
      }
    });
  }

  private static void readStream(HttpClientResponse resp, HttpClientRequest req, SseTimer timer, Promise<Exchange> result,
                                 String rid, int cancelAfterTokens) {
    resp.handler(chunk -> {
      if (result.future().isComplete()) return;
      timer.feed(chunk, System.nanoTime());
      if (cancelAfterTokens >= 0 && timer.tokens() >= cancelAfterTokens
          && result.tryComplete(Exchange.of(timer, System.nanoTime(), Exchange.Outcome.CANCELLED, 200, rid, null))) {
        req.reset();
      }
    });
    resp.exceptionHandler(err -> result.tryComplete(Exchange.of(timer, System.nanoTime(),
        timer.error() != null ? Exchange.Outcome.STREAM_ERROR : Exchange.Outcome.TRANSPORT_ERROR, 200, rid, message(err))));
    resp.endHandler(v -> {
      long end = System.nanoTime();
      Exchange.Outcome outcome = timer.error() != null ? Exchange.Outcome.STREAM_ERROR
          : timer.done() ? Exchange.Outcome.OK : Exchange.Outcome.NO_DONE;
      result.tryComplete(Exchange.of(timer, end, outcome, 200, rid, timer.error() == null ? null : snippet(Buffer.buffer(timer.error()))));
    });
  }

  /** {@link #post} from a plain thread: runs it on a Vert.x context and waits for its end (never call on an event loop). */
  public Exchange postBlocking(String path, Buffer body, boolean stream, long timeoutMs) {
    Promise<Exchange> done = Promise.promise();
    vertx.runOnContext(v -> post(path, body, stream, timeoutMs).onComplete(done));
    return LoadGenerator.join(done.future(), timeoutMs / 1000.0 + 5);
  }

  /** Runs {@code action} on this client's Vert.x (requests must start on a context). */
  public void vertxRun(Runnable action) {
    vertx.runOnContext(v -> action.run());
  }

  /** A whole answer: status and body. */
  public record Reply(int status, Buffer body) {
  }

  /** A GET read whole (state, health); fails on transport errors or after {@code timeoutMs}. */
  public Future<Reply> get(String path, long timeoutMs) {
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.GET).setHost(host).setPort(port).setURI(path)
        .setIdleTimeout(timeoutMs);
    return client.request(options).compose(req -> req.send())
        .compose(resp -> resp.body().map(b -> new Reply(resp.statusCode(), b)));
  }

  /** The same from a plain thread: runs the request on a Vert.x context and waits for it. */
  public Reply getBlocking(String path, long timeoutMs) {
    Promise<Reply> reply = Promise.promise();
    vertx.runOnContext(v -> get(path, timeoutMs).onComplete(reply));
    return LoadGenerator.join(reply.future(), timeoutMs / 1000.0 + 5);
  }

  static String snippet(Buffer body) {
    String s = body.toString();
    return s.length() > 200 ? s.substring(0, 200) + "…" : s;
  }

  static String message(Throwable err) {
    return err.getClass().getSimpleName() + (err.getMessage() == null ? "" : ": " + err.getMessage());
  }
}
