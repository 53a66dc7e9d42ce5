package narwhal.router;

import io.vertx.core.http.HttpServerResponse;

/**
 * OpenAI's rate-limit headers on every answer to a tenant with a request or token quota
 * (docs/errors.md#quotas-and-the-queue): {@code x-ratelimit-limit-requests}, {@code x-ratelimit-remaining-requests},
 * {@code x-ratelimit-reset-requests} (a duration, e.g. {@code 17s}, until the requests counted now have left the minute)
 * and the same three for {@code -tokens}; a quota the tenant does not have is left out.
 */
final class RateLimitHeaders {
  private RateLimitHeaders() {
  }

  static void put(HttpServerResponse response, TenantQuotas.Headroom headroom) {
    if (headroom == null || response.headWritten()) return;
    if (headroom.limitRequests() > 0) {
      response.putHeader("x-ratelimit-limit-requests", String.valueOf(headroom.limitRequests()))
          .putHeader("x-ratelimit-remaining-requests", String.valueOf(headroom.remainingRequests()))
          .putHeader("x-ratelimit-reset-requests", duration(headroom.resetRequestsS()));
    }
    if (headroom.limitTokens() > 0) {
      response.putHeader("x-ratelimit-limit-tokens", String.valueOf(headroom.limitTokens()))
          .putHeader("x-ratelimit-remaining-tokens", String.valueOf(headroom.remainingTokens()))
          .putHeader("x-ratelimit-reset-tokens", duration(headroom.resetTokensS()));
    }
  }

  /** {@code 0s}, {@code 17s}, {@code 1m0s}: OpenAI's form. */
  static String duration(long seconds) {
    return seconds < 60 ? seconds + "s" : seconds / 60 + "m" + seconds % 60 + "s";
  }
}
