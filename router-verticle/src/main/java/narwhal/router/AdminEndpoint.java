package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.AdminCommand;
import narwhal.common.bus.AdminProof;

import java.util.function.Function;

/**
 * {@code POST /narwhal/admin} on the health port (docs/operations.md#admin-commands): the body is an admin command as
 * on the bus ({@code {"command", "args"}}), the admin token comes in {@code Authorization: Bearer}. The token is
 * turned into an {@link AdminProof} here and the command handed to this replica's own breaker through a local-only
 * address, so it never crosses the cluster; the breaker checks the proof (constant time) and answers. 401 for a
 * missing or wrong token, 400 naming the field of a bad body, 413 for a body over {@link #MAX_BODY_BYTES}, 409 when an
 * engine command's effect did not show in the shared state; otherwise 200 with the breaker's reply.
 */
final class AdminEndpoint {
  static final String PATH = "/narwhal/admin";
  static final int MAX_BODY_BYTES = 16 * 1024;

  private final Function<JsonObject, Future<JsonObject>> replica;

  /** @param replica sends a command body to this replica's breaker and completes with its reply, on any thread */
  AdminEndpoint(Function<JsonObject, Future<JsonObject>> replica) {
    this.replica = replica;
  }

  void handle(HttpServerRequest request) {
    if (request.method() != HttpMethod.POST) {
      request.response().setStatusCode(405).putHeader("allow", "POST").end();
      return;
    }
    String declared = request.getHeader("content-length");
    if (declared != null && declared.chars().allMatch(Character::isDigit) && declared.length() < 12
        && Long.parseLong(declared) > MAX_BODY_BYTES) {
      tooLarge(request);
      return;
    }
    if ("100-continue".equalsIgnoreCase(request.getHeader("expect"))) request.response().writeContinue();
    Buffer body = Buffer.buffer();
    boolean[] over = {false};
    request.handler(chunk -> {
      if (over[0]) return;
      if (body.length() + chunk.length() > MAX_BODY_BYTES) {
        over[0] = true;
        tooLarge(request);
        return;
      }
      body.appendBuffer(chunk);
    });
    request.endHandler(v -> {
      if (!over[0]) command(request, body);
    });
  }

  private static void tooLarge(HttpServerRequest request) {
    boolean http1 = request.version() != io.vertx.core.http.HttpVersion.HTTP_2;
    if (http1) request.response().putHeader("connection", "close");
    // HTTP/1: the rest of the body is never read, so the connection goes; HTTP/2: the stream alone ends
    error(request.response(), 413, "body: larger than " + MAX_BODY_BYTES + " bytes").onComplete(v -> {
      if (http1) request.connection().close();
    });
  }

  private void command(HttpServerRequest request, Buffer raw) {
    JsonObject body;
    try {
      body = raw.length() == 0 ? null : new JsonObject(raw);
    } catch (DecodeException | ClassCastException e) {
      body = null;
    }
    if (body == null) {
      error(request.response(), 400, "body: expected a JSON object {\"command\": ..., \"args\": {...}}");
      return;
    }
    if (!(body.getValue("command") instanceof String name) || AdminCommand.parse(name).isEmpty()) {
      error(request.response(), 400, "command: " + (body.getValue("command") == null ? "missing" : body.getValue("command") + " is not a command")
          + ": expected one of " + String.join(", ", AdminCommand.wireNames()));
      return;
    }
    Object args = body.getValue("args", new JsonObject());
    if (!(args instanceof JsonObject argsObject)) {
      error(request.response(), 400, "args: expected a JSON object");
      return;
    }
    String token = bearer(request.getHeader("authorization"));
    if (token == null && AdminCommand.parse(name).get().needsToken()) {
      error(request.response(), 401, "admin token missing: send Authorization: Bearer <token>");
      return;
    }
    Context here = Vertx.currentContext();
    replica.apply(AdminProof.body(token, name, argsObject, System.currentTimeMillis()))
        .onComplete(ar -> here.runOnContext(v -> answer(request.response(), ar.succeeded() ? ar.result() : null, ar.cause())));
  }

  /** The token of {@code Bearer <token>} (scheme case-insensitive); null when absent or another scheme. */
  static String bearer(String authorization) {
    if (authorization == null || authorization.length() < 8 || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) return null;
    String token = authorization.substring(7).strip();
    return token.isEmpty() ? null : token;
  }

  private static void answer(HttpServerResponse response, JsonObject reply, Throwable failure) {
    if (reply != null) {
      JsonObject plain = AdminProof.unsigned(reply);
      JsonObject effect = plain.getJsonObject("effect");
      if (effect != null && !effect.getBoolean("done", false)) {
        plain.put("error", new JsonObject().put("code", 409).put("message", notSeen(effect)));
        response.setStatusCode(409);
      }
      response.putHeader("content-type", "application/json").end(plain.encode());
    } else if (failure instanceof ReplyException r && r.failureType() == ReplyFailure.RECIPIENT_FAILURE) {
      error(response, r.failureCode() >= 400 && r.failureCode() < 600 ? r.failureCode() : 500, r.getMessage());
    } else if (failure instanceof ReplyException r && r.failureType() == ReplyFailure.TIMEOUT) {
      error(response, 504, "the replica's breaker did not answer in time: " + r.getMessage());
    } else {
      error(response, 503, "the replica's breaker does not answer: " + (failure == null ? "no reply" : failure.getMessage()));
    }
  }

  /** The message of an engine command whose effect the shared state does not show. */
  static String notSeen(JsonObject effect) {
    return "not done: asked " + effect.getString("iid") + " " + effect.getString("asked") + ", the shared state shows "
        + effect.getString("seen");
  }

  private static Future<Void> error(HttpServerResponse response, int status, String message) {
    return response.setStatusCode(status).putHeader("content-type", "application/json")
        .end(new JsonObject().put("error", new JsonObject().put("code", status).put("message", message)).encode());
  }
}
