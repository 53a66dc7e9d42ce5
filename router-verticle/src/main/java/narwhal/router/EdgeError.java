package narwhal.router;

import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.EdgeFailure;
import narwhal.common.fault.EngineFault;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * An error answered before any output, in the OpenAI/vLLM shape {@code {"error": {message, type, param, code}}}
 * (docs/errors.md). {@code reason} is what the journal and metrics record: an {@link EdgeFailure}'s wire name, or a
 * {@code FaultKind}'s reason for an engine fault passed on; {@code retryAfter} adds {@code Retry-After: 1}.
 */
record EdgeError(int status, String type, String message, String param, Object code, String reason, boolean retryAfter) {

  EdgeError(int status, String type, String message, String param, Object code, EdgeFailure reason, boolean retryAfter) {
    this(status, type, message, param, code, reason.wireName(), retryAfter);
  }

  /** A request the router refuses as invalid: vLLM's type for a 400, {@code BadRequestError}; {@code param} names the field. */
  public static EdgeError invalid(String message, String param) {
    return new EdgeError(400, "BadRequestError", message, param, null, EdgeFailure.INVALID_REQUEST, false);
  }

  /**
   * vLLM's own refusal of a request that does not fit the model's context ({@link ContextFit}): its type
   * {@code BadRequestError}, its message and {@code param}; no leg was sent.
   */
  public static EdgeError contextLength(String message, String param) {
    return new EdgeError(400, "BadRequestError", message, param, null, EdgeFailure.CONTEXT_LENGTH, false);
  }

  /** A known path asked with another method; the response carries {@code Allow: <allowed>}. */
  public static EdgeError methodNotAllowed(String method, String path, String allowed) {
    return new EdgeError(405, "invalid_request_error", "Method Not Allowed: " + method + " " + path + " (allowed: " + allowed + ")",
        null, null, EdgeFailure.METHOD_NOT_ALLOWED, false);
  }

  /** A cross-origin request from an origin {@code server.cors.allowed_origins} does not list ({@link Cors}). */
  public static EdgeError corsRejected() {
    return new EdgeError(403, "invalid_request_error", "CORS Rejected - Invalid origin", null, null, EdgeFailure.CORS_REJECTED, false);
  }

  /** An {@code Expect} other than {@code 100-continue}: 417, as vLLM's server answers it. */
  public static EdgeError expectationFailed(String expectation) {
    return new EdgeError(417, "invalid_request_error", "Expect: " + expectation + " is not supported (only 100-continue)", null,
        null, EdgeFailure.EXPECTATION_FAILED, false);
  }

  public static EdgeError modelNotFound(String model) {
    return new EdgeError(404, "NotFoundError", "The model `" + model + "` does not exist.", "model", null,
        EdgeFailure.MODEL_NOT_FOUND, false);
  }

  public static EdgeError tooLarge(long limit) {
    return new EdgeError(413, "request_too_large", "request body larger than " + limit + " bytes", null, null, EdgeFailure.REQUEST_TOO_LARGE, false);
  }

  public static EdgeError receiveTimeout(long millis) {
    return new EdgeError(408, "request_timeout", "request not received within " + millis / 1000.0 + "s", null, null,
        EdgeFailure.RECEIVE_TIMEOUT, false);
  }

  /** 401 for {@code /v1/*} without a valid client key; the message never repeats what was sent. */
  public static EdgeError invalidApiKey(boolean presented) {
    return new EdgeError(401, "invalid_api_key", presented ? "Incorrect API key provided."
        : "You didn't provide an API key: send Authorization: Bearer <key>.", null, "invalid_api_key", EdgeFailure.INVALID_API_KEY, false);
  }

  public static EdgeError overloaded() {
    return new EdgeError(429, "server_overloaded_error", "router in-flight limit reached", null, null, EdgeFailure.IN_FLIGHT_LIMIT, true);
  }

  /**
   * A tenant's quota is spent ({@link TenantQuotas}): OpenAI's 429 {@code rate_limit_exceeded}, its {@code type} the
   * quota's unit ({@code requests}, {@code tokens}); {@code Retry-After} is set by the caller, who knows when it frees.
   */
  public static EdgeError overQuota(narwhal.common.config.TenantConfig tenant, String quota) {
    return switch (quota) {
      case "tokens_per_minute" -> overTokens(tenant);
      case "max_concurrent" -> overConcurrency(tenant);
      default -> overRequests(tenant);
    };
  }

  public static EdgeError overRequests(narwhal.common.config.TenantConfig tenant) {
    return new EdgeError(429, "requests", "Rate limit reached for tenant " + tenant.name() + " on requests per minute: limit "
        + tenant.requestsPerMinute() + " (tenants." + tenant.name() + ".requests_per_minute)", null, "rate_limit_exceeded",
        EdgeFailure.QUOTA_REQUESTS, false);
  }

  public static EdgeError overTokens(narwhal.common.config.TenantConfig tenant) {
    return new EdgeError(429, "tokens", "Rate limit reached for tenant " + tenant.name() + " on tokens per minute: limit "
        + tenant.tokensPerMinute() + " (tenants." + tenant.name() + ".tokens_per_minute)", null, "rate_limit_exceeded",
        EdgeFailure.QUOTA_TOKENS, false);
  }

  public static EdgeError overConcurrency(narwhal.common.config.TenantConfig tenant) {
    return new EdgeError(429, "requests", "Rate limit reached for tenant " + tenant.name() + " on concurrent requests: limit "
        + tenant.maxConcurrent() + " (tenants." + tenant.name() + ".max_concurrent)", null, "rate_limit_exceeded",
        EdgeFailure.QUOTA_CONCURRENT, true);
  }

  /**
   * The fleet was saturated and the request's turn did not come within {@code flow.queue_timeout_s} ({@code timedOut}),
   * or the router's queue was full ({@code flow.max_queued}) and it was shed: 429 with {@code Retry-After: 1}.
   */
  public static EdgeError queueRefused(boolean timedOut) {
    return timedOut
        ? new EdgeError(429, "server_overloaded_error", "the fleet is saturated: no turn within flow.queue_timeout_s",
            null, null, EdgeFailure.QUEUE_TIMEOUT, true)
        : new EdgeError(429, "server_overloaded_error", "the fleet is saturated and the router's queue is full "
            + "(flow.max_queued)", null, null, EdgeFailure.QUEUE_FULL, true);
  }

  /** No serving engine of {@code model} can take a phase; other models may still serve. */
  public static EdgeError noEngine(boolean dispatched, String model) {
    return new EdgeError(503, dispatched ? "backend_unavailable" : "no_schedulable_engines",
        "Engine capacity is unavailable for model `" + model + "`", null, null, EdgeFailure.NO_ENGINE, true);
  }

  /**
   * The replica is stopping (after SIGTERM and {@code serving.drain_delay_s}): nothing was processed, so another replica
   * may take the request. Sent with {@code Connection: close} so the client's next request opens a new connection.
   */
  public static EdgeError shuttingDown() {
    return new EdgeError(503, "shutting_down", "this router replica is shutting down; retry on another replica", null, null,
        EdgeFailure.SHUTTING_DOWN, true);
  }

  /**
   * The replica's graceful stop ended ({@code serving.graceful_timeout_s}) while the request was still running: it is cut
   * with this error (or, once output was streamed, this terminal event). No evidence against any engine.
   */
  public static EdgeError graceExpired() {
    return new EdgeError(503, "shutting_down", "this router replica stopped before the request finished "
        + "(serving.graceful_timeout_s); retry on another replica", null, null, EdgeFailure.GRACEFUL_TIMEOUT, false);
  }

  public static EdgeError standby() {
    return new EdgeError(503, "standby", "the fleet is held for a whole-wave restart", null, null, EdgeFailure.FLEET_HOLD, true);
  }

  /**
   * vLLM's answer for a {@code previous_response_id} it does not hold (serving_responses.py): no engine of this fleet
   * is known to have answered it, or the one that did is gone.
   */
  public static EdgeError responseNotFound(String id) {
    return new EdgeError(404, "invalid_request_error", "Response with id '" + id + "' not found.", "response_id", 404,
        EdgeFailure.RESPONSE_NOT_FOUND, false);
  }

  public static EdgeError deadline() {
    return new EdgeError(504, "request_expired", "original request deadline expired", null, null, EdgeFailure.REQUEST_DEADLINE, false);
  }

  /**
   * An engine's own error passed to a client, the one place an engine's words become a client's error (a leg's fault
   * ending the request, or the 4xx of an endpoint an engine runs whole): {@code message} with every engine address of
   * {@code engines} replaced by {@code <engine>} ({@link #redacted}); the journal keeps the engine's own words.
   */
  static EdgeError ofEngine(int status, String type, String message, String param, Object code, String reason,
                            List<EngineConfig> engines) {
    return new EdgeError(status, type, redacted(message, engines), param, code, reason, false);
  }

  /**
   * {@code fault} ending a request: before output the engine's own error type, {@code param} and {@code code} (its 4xx
   * answer, its error object); once output exists ({@code afterOutput}) the phase is the type (docs/errors.md).
   */
  static EdgeError ofEngine(EngineFault fault, boolean afterOutput, List<EngineConfig> engines) {
    return ofEngine(fault.status(), afterOutput ? fault.phase().wireName() : fault.errorType(), fault.detail(),
        afterOutput ? null : fault.param(), afterOutput ? null : fault.code(), fault.kind().reason(), engines);
  }

  /** The address patterns of one engine list, compiled once per list ({@link NarwhalConfig} changes only on a reload). */
  private record Addresses(List<EngineConfig> engines, List<Pattern> patterns) {
  }

  private static volatile Addresses addresses = new Addresses(List.of(), List.of());

  /**
   * {@code message} with every engine address of {@code engines} (its base URL and anything after it, its
   * {@code host:port}, its host when that is an address or a dotted name) replaced by {@code <engine>}: an engine's
   * error passed to a client (docs/errors.md) must not tell it where the fleet's engines are.
   */
  static String redacted(String message, List<EngineConfig> engines) {
    if (message == null || message.isEmpty()) return message;
    String out = message;
    for (Pattern address : patterns(engines)) out = address.matcher(out).replaceAll(ENGINE);
    return out;
  }

  private static final String ENGINE = "<engine>";

  private static List<Pattern> patterns(List<EngineConfig> engines) {
    Addresses known = addresses;
    if (known.engines() == engines) return known.patterns();
    // every engine's URLs first, then host:port, then hosts: engines sharing a host must not leave a URL half read
    List<Pattern> urls = new ArrayList<>();
    List<Pattern> hostPorts = new ArrayList<>();
    List<Pattern> hosts = new ArrayList<>();
    for (EngineConfig engine : engines) {
      URI uri;
      try {
        uri = URI.create(engine.url());
      } catch (IllegalArgumentException notAUri) {
        continue;
      }
      String host = uri.getHost();
      if (host == null) continue;
      String bareHost = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
      int port = uri.getPort();
      String quotedHost = Pattern.quote(host);
      urls.add(Pattern.compile("(?i)\\b[a-z][a-z0-9+.-]*://" + quotedHost + (port >= 0 ? ":" + port : "(?::\\d+)?")
          + "[^\\s\"'<>)]*"));
      if (port >= 0) hostPorts.add(Pattern.compile(Pattern.quote(host + ":" + port)));
      if (bareHost.contains(".") || bareHost.contains(":")) {
        hosts.add(Pattern.compile("(?<![\\w.:-])" + Pattern.quote(bareHost) + "(?![\\w-]|\\.\\w)"));
      }
    }
    List<Pattern> all = new ArrayList<>(urls);
    all.addAll(hostPorts);
    all.addAll(hosts);
    List<Pattern> compiled = List.copyOf(all);
    addresses = new Addresses(engines, compiled);
    return compiled;
  }

  public JsonObject body() {
    return new JsonObject().put("error", new JsonObject().put("message", message).put("type", type).put("param", param)
        .put("code", code == null ? status : code));
  }

  public void send(HttpServerResponse response) {
    if (response.headWritten() || response.ended() || response.closed()) return;
    response.setStatusCode(status).putHeader("content-type", "application/json");
    if (retryAfter) response.putHeader("retry-after", "1");
    response.end(body().toBuffer());
  }
}
