package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.impl.NoStackTraceThrowable;

/**
 * One {@code GET} of an engine's {@code /metrics} or {@code /v1/models} bounded in time and in size: past either bound
 * the request is reset, so the transfer ends with the wait. A timeout on the answer alone ended the wait, not the
 * transfer: an engine streaming an endless body kept being buffered for as long as it sent, and every round opened
 * another such stream.
 */
final class EngineGet {
  /**
   * The longest answer taken: vLLM's {@code /metrics} is tens to hundreds of KB (histograms per model and adapter), its
   * {@code /v1/models} less; a longer one fails, its transfer cut.
   */
  static final int MAX_BYTES = 16 * 1024 * 1024;

  /** An answer other than 200. */
  static final class Status extends NoStackTraceThrowable {
    final int status;

    Status(int status) {
      super("HTTP " + status);
      this.status = status;
    }
  }

  private EngineGet() {
  }

  /**
   * The body of {@code url}'s answer, within {@code timeoutMs} and {@link #MAX_BYTES}; fails with {@link Status} for an
   * answer other than 200, and with the reason otherwise. {@code key}: the engines' API key, "" for none.
   */
  static Future<Buffer> get(Vertx vertx, HttpClient http, String url, String userAgent, String key, long timeoutMs) {
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(url).setFollowRedirects(false)
        .setIdleTimeout(timeoutMs).putHeader(HttpHeaders.USER_AGENT, userAgent);
    if (!key.isEmpty()) options.putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + key);
    Promise<Buffer> body = Promise.promise();
    long timer = vertx.setTimer(timeoutMs, t -> body.tryFail(new NoStackTraceThrowable("no answer within " + timeoutMs + " ms")));
    body.future().onComplete(done -> vertx.cancelTimer(timer));
    http.request(options).onFailure(body::tryFail).onSuccess(request -> {
      body.future().onFailure(failed -> request.reset());
      request.send().onFailure(body::tryFail).onSuccess(response -> {
        if (response.statusCode() != 200) {
          body.tryFail(new Status(response.statusCode()));
          return;
        }
        Buffer text = Buffer.buffer();
        response.exceptionHandler(body::tryFail);
        response.handler(chunk -> {
          if (body.future().isComplete()) return;
          if (text.length() + chunk.length() > MAX_BYTES) {
            body.tryFail(new NoStackTraceThrowable("answer larger than " + MAX_BYTES + " bytes"));
          } else {
            text.appendBuffer(chunk);
          }
        });
        response.endHandler(v -> body.tryComplete(text));
      });
    });
    return body.future();
  }
}
