package narwhal.sim;

import io.vertx.core.json.JsonObject;

/**
 * An error answer in vLLM's envelope {@code {"error":{"message","type","param","code"}}}, with
 * the HTTP status equal to {@code code}. Thrown by request validation, built by faults.
 */
final class ApiError extends RuntimeException {

  final int status;
  final String type;
  final String param;

  ApiError(int status, String message, String type, String param) {
    super(message, null, false, false);
    this.status = status;
    this.type = type == null ? typeFor(status) : type;
    this.param = param;
  }

  static ApiError badRequest(String message, String param) {
    return new ApiError(400, message, "BadRequestError", param);
  }

  static ApiError modelNotFound(String model) {
    return new ApiError(404, "The model `" + model + "` does not exist.", "NotFoundError", "model");
  }

  static ApiError internal() {
    return new ApiError(500, "Internal server error", "InternalServerError", null);
  }

  static ApiError queueFull() {
    return new ApiError(503, "Request queue full.", "Service Unavailable", null);
  }

  JsonObject toJson() {
    return envelope(getMessage(), type, param, status);
  }

  static JsonObject envelope(String message, String type, String param, int code) {
    return new JsonObject().put("error", new JsonObject()
      .put("message", message)
      .put("type", type)
      .put("param", param)
      .put("code", code));
  }

  /** vLLM's error type for a status: exception class names for the common ones, else the HTTP phrase. */
  static String typeFor(int status) {
    switch (status) {
      case 400: return "BadRequestError";
      case 401: return "AuthenticationError";
      case 403: return "PermissionDeniedError";
      case 404: return "NotFoundError";
      case 422: return "UnprocessableEntityError";
      case 500: return "InternalServerError";
      case 501: return "NotImplementedError";
      default: return phrase(status);
    }
  }

  static String phrase(int status) {
    switch (status) {
      case 408: return "Request Timeout";
      case 409: return "Conflict";
      case 413: return "Request Entity Too Large";
      case 429: return "Too Many Requests";
      case 500: return "Internal Server Error";
      case 502: return "Bad Gateway";
      case 503: return "Service Unavailable";
      case 504: return "Gateway Timeout";
      default: return io.netty.handler.codec.http.HttpResponseStatus.valueOf(status).reasonPhrase();
    }
  }
}
