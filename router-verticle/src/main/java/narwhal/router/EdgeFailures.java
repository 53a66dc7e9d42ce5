package narwhal.router;

import narwhal.common.fault.RequestOutcome;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.RoutingContext;

import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * What the edge answers when no handler of its own answered (docs/errors.md): a request head the HTTP decoder
 * refused, a path or method no route takes, and a routing failure (Vert.x Web's status, or an exception), each as
 * an OpenAI-style error.
 */
final class EdgeFailures {
  /** The router's paths and the methods each answers: another method on one of them is a 405 naming these. */
  static final Map<String, String> ALLOWED_METHODS = Map.ofEntries(Map.entry("/v1/completions", "POST"),
      Map.entry("/v1/chat/completions", "POST"), Map.entry("/v1/models", "GET"), Map.entry("/health", "GET"),
      Map.entry("/ready", "GET"), Map.entry("/metrics", "GET"), Map.entry("/narwhal/state", "GET"),
      Map.entry("/v1/embeddings", "POST"), Map.entry("/v1/responses", "POST"),
      Map.entry("/tokenize", "POST"), Map.entry("/detokenize", "POST"));

  private final RouterContext ctx;
  private final ReceiveGuard receive;

  EdgeFailures(RouterContext ctx, ReceiveGuard receive) {
    this.ctx = ctx;
    this.receive = receive;
  }

  /**
   * A request head the HTTP decoder could not read or refused ({@link FramingDecoder}): 4xx with its error and a
   * journal row (its endpoint null when the request line itself was not read), then close; the decoder reads nothing
   * more from the connection.
   */
  void malformed(HttpServerRequest request) {
    Throwable cause = request.decoderResult().cause();
    EdgeError error = cause instanceof TooLongHttpLineException
        ? new EdgeError(414, "invalid_request_error", "request line too long", null, null, "invalid_request", false)
        : cause instanceof TooLongHttpHeaderException
        ? new EdgeError(431, "invalid_request_error", "request headers too large", null, null, "invalid_request", false)
        : EdgeError.invalid(cause instanceof FramingDecoder.Refused ? cause.getMessage() : "malformed HTTP request", null);
    ctx.metrics().offered();
    String rid = UUID.randomUUID().toString();
    request.response().putHeader("x-request-id", rid).putHeader("connection", "close");
    String endpoint = request.headers().contains(FramingDecoder.UNREAD) ? null : request.path();
    EdgeRefusal.refuse(ctx, request, endpoint, rid, Instant.now(), System.nanoTime(), error, RequestOutcome.INVALID);
    request.connection().close();
  }

  /**
   * No route took the request: 405 with {@code Allow} for a known path asked with another method (as vLLM's
   * FastAPI answers), else 404.
   */
  static void unrouted(RoutingContext rc) {
    String path = rc.request().path();
    String allowed = allowedMethods(path);
    if (allowed != null) {
      rc.response().putHeader("allow", allowed);
      EdgeError.methodNotAllowed(rc.request().method().name(), path, allowed).send(rc.response());
      return;
    }
    new EdgeError(404, "invalid_request_error", "no route for " + rc.request().method() + " " + path, null, null, "not_found", false)
        .send(rc.response());
  }

  /**
   * The methods a known path answers, or null for an unknown path: the fixed paths (with or without a trailing slash,
   * which Vert.x's router takes as the same route), and vLLM's {@code /v1/responses/{response_id}} (GET) and
   * {@code /v1/responses/{response_id}/cancel} (POST).
   */
  static String allowedMethods(String path) {
    String p = path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    String fixed = ALLOWED_METHODS.get(p);
    if (fixed != null || !p.startsWith(STORED_RESPONSES)) return fixed;
    String[] rest = p.substring(STORED_RESPONSES.length()).split("/", -1);
    if (rest.length == 1 && !rest[0].isEmpty()) return "GET";
    if (rest.length == 2 && !rest[0].isEmpty() && rest[1].equals("cancel")) return "POST";
    return null;
  }

  private static final String STORED_RESPONSES = "/v1/responses/";

  /** A routing failure: a body over the limit is a 413 refusal; CORS, {@code Expect} and other 4xx map to their errors; the rest is a 500. */
  void failure(RoutingContext rc) {
    int status = rc.statusCode();
    if (status == 413) {
      receive.tooLarge(rc);
      return;
    }
    EdgeError error = status == 403 ? EdgeError.corsRejected()
        : status == 417 ? EdgeError.expectationFailed(rc.request().getHeader("expect"))
        : status == 404 || status == 405 ? new EdgeError(status, "invalid_request_error", "no route for " + rc.request().path(), null, null, "not_found", false)
        : status >= 400 && status < 500 ? EdgeError.invalid("malformed request", null)
        : new EdgeError(500, "internal_error", "internal router error", null, null, "internal", false);
    error.send(rc.response());
  }
}
