package narwhal.sim;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A plain HTTP client for tests: every call returns what a client observed — status, headers,
 * body text, SSE frames, and the transport failure (refused, closed, idle timeout) if any.
 */
final class SimClient {

  static final long DEFAULT_IDLE_TIMEOUT_MS = 10_000;

  private final Vertx vertx;
  /** Every exchange runs here: composed from the test thread, a response's first chunk can arrive before its handler is set. */
  private final Context context;
  private final Map<Long, HttpClient> clients = new ConcurrentHashMap<>();

  SimClient(Vertx vertx) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
  }

  /** A client whose connections close after {@code idleTimeoutMs} without traffic (a client-side read timeout). */
  private HttpClient client(long idleTimeoutMs) {
    return clients.computeIfAbsent(idleTimeoutMs, ms -> vertx.createHttpClient(new HttpClientOptions()
      .setKeepAlive(false)
      .setConnectTimeout(5_000)
      .setIdleTimeout((int) (long) ms)
      .setIdleTimeoutUnit(TimeUnit.MILLISECONDS)));
  }

  /** What a client saw. {@code status} is 0 and {@code failure} set when no response head arrived. */
  static final class Reply {
    int status;
    MultiMap headers;
    String text = "";
    Throwable failure;

    JsonObject json() {
      return new JsonObject(text);
    }

    JsonArray jsonArray() {
      return new JsonArray(text);
    }

    String header(String name) {
      return headers == null ? null : headers.get(name);
    }

    /** SSE payloads in order: each {@code data: } line's content (JSON text or {@code [DONE]}). */
    List<String> frames() {
      List<String> out = new ArrayList<>();
      for (String block : text.split("\n\n")) {
        if (block.startsWith("data: ")) {
          out.add(block.substring("data: ".length()));
        }
      }
      return out;
    }

    /** Frames that are JSON objects (everything but [DONE]). */
    List<JsonObject> jsonFrames() {
      List<JsonObject> out = new ArrayList<>();
      frames().stream().filter(f -> !f.equals("[DONE]")).forEach(f -> out.add(new JsonObject(f)));
      return out;
    }

    boolean endsWithDone() {
      List<String> frames = frames();
      return !frames.isEmpty() && frames.get(frames.size() - 1).equals("[DONE]");
    }

    boolean hasDone() {
      return frames().contains("[DONE]");
    }

    /** Generated text of a stream: completion {@code text} or chat {@code delta.content}, concatenated. */
    String streamedText() {
      StringBuilder out = new StringBuilder();
      for (JsonObject frame : jsonFrames()) {
        JsonArray choices = frame.getJsonArray("choices");
        if (choices == null || choices.isEmpty()) {
          continue;
        }
        JsonObject choice = choices.getJsonObject(0);
        if (choice.containsKey("delta")) {
          String content = choice.getJsonObject("delta").getString("content");
          out.append(content == null ? "" : content);
        } else {
          out.append(choice.getString("text", ""));
        }
      }
      return out.toString();
    }
  }

  Reply post(SimEngine engine, String path, JsonObject body, String... headers) {
    return call(engine.port(), HttpMethod.POST, path, body == null ? null : body.toBuffer(), DEFAULT_IDLE_TIMEOUT_MS, headers);
  }

  Reply post(SimEngine engine, String path, JsonArray body) {
    return call(engine.port(), HttpMethod.POST, path, body.toBuffer(), DEFAULT_IDLE_TIMEOUT_MS);
  }

  Reply postWithIdleTimeout(SimEngine engine, String path, JsonObject body, long idleTimeoutMs, String... headers) {
    return call(engine.port(), HttpMethod.POST, path, body.toBuffer(), idleTimeoutMs, headers);
  }

  Reply postRaw(int port, String path, Buffer body, String... headers) {
    return call(port, HttpMethod.POST, path, body, DEFAULT_IDLE_TIMEOUT_MS, headers);
  }

  Reply get(SimEngine engine, String path) {
    return call(engine.port(), HttpMethod.GET, path, null, DEFAULT_IDLE_TIMEOUT_MS);
  }

  Reply delete(SimEngine engine, String path) {
    return call(engine.port(), HttpMethod.DELETE, path, null, DEFAULT_IDLE_TIMEOUT_MS);
  }

  Reply call(int port, HttpMethod method, String path, Buffer body, long idleTimeoutMs, String... headers) {
    try {
      return callAsync(port, method, path, body, idleTimeoutMs, headers).await(30, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("no outcome within 30 s for " + method + " " + path, e);
    }
  }

  /** Like {@link #post}, without waiting: for concurrent requests. */
  Future<Reply> postAsync(SimEngine engine, String path, JsonObject body) {
    return callAsync(engine.port(), HttpMethod.POST, path, body.toBuffer(), DEFAULT_IDLE_TIMEOUT_MS);
  }

  Future<Reply> callAsync(int port, HttpMethod method, String path, Buffer body, long idleTimeoutMs, String... headers) {
    return Future.future(p -> context.runOnContext(v -> exchange(port, method, path, body, idleTimeoutMs, headers).onComplete(p)));
  }

  private Future<Reply> exchange(int port, HttpMethod method, String path, Buffer body, long idleTimeoutMs, String... headers) {
    Reply reply = new Reply();
    RequestOptions options = new RequestOptions().setMethod(method).setHost("127.0.0.1").setPort(port).setURI(path);
    for (int i = 0; i + 1 < headers.length; i += 2) {
      options.putHeader(headers[i], headers[i + 1]);
    }
    if (body != null) {
      options.putHeader("content-type", "application/json");
    }
    StringBuilder text = new StringBuilder();
    Future<Void> exchange = client(idleTimeoutMs).request(options)
      .compose(req -> body == null ? req.send() : req.send(body))
      .compose(resp -> {
        reply.status = resp.statusCode();
        reply.headers = resp.headers();
        resp.handler(chunk -> text.append(chunk.toString()));
        return resp.end();
      });
    return exchange.transform(ar -> {
      reply.failure = ar.cause();
      reply.text = text.toString();
      return Future.succeededFuture(reply);
    });
  }

  /** Polls a condition on Vert.x timers until it holds (the test thread waits on a timer, never sleeps); false if it never does. */
  boolean eventually(BooleanSupplier condition) {
    for (int i = 0; i < 500; i++) {
      if (condition.getAsBoolean()) {
        return true;
      }
      vertx.timer(10).await();
    }
    return condition.getAsBoolean();
  }

  static JsonObject completion(String prompt) {
    return new JsonObject().put("model", SimEngineOptions.DEFAULT_MODEL).put("prompt", prompt);
  }

  static JsonObject chat(String content) {
    return new JsonObject().put("model", SimEngineOptions.DEFAULT_MODEL)
      .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", content)));
  }

  /** The prefill leg as the router sends it: one token, not streamed, do_remote_decode. */
  static JsonObject prefillLeg(JsonObject clientBody) {
    JsonObject leg = clientBody.copy()
      .put("stream", false)
      .put("max_tokens", 1)
      .put("kv_transfer_params", new JsonObject().put("do_remote_decode", true).put("do_remote_prefill", false)
        .putNull("remote_engine_id").putNull("remote_block_ids").putNull("remote_host").putNull("remote_port"));
    leg.remove("stream_options");
    return leg;
  }

  /** The decode leg: the client's body with the producer's descriptor. */
  static JsonObject decodeLeg(JsonObject clientBody, JsonObject descriptor) {
    return clientBody.copy().put("kv_transfer_params", descriptor);
  }
}
