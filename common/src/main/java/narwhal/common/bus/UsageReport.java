package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A replica's use of each tenant's quotas ({@link Addresses#TENANT_USAGE}), published every second so every replica
 * leases what is left of a cluster-wide quota: per tenant, the requests and tokens it counted in the last minute, the
 * requests it runs now, how many it was asked since its last report and what it may still admit before the next. JSON
 * {@code {"origin", "at_ms", "tenants": {name: {"requests", "tokens", "concurrent", "demand", "leased_requests",
 * "leased_tokens", "requests_free_in_s", "tokens_free_in_s"}}}}. What a peer controls is bounded: at most
 * {@value #MAX_TENANTS} tenants, counts from 0 to {@value #MAX_COUNT}, an origin of at most 128 characters.
 * {@code heardAtMs} is the receiver's clock when it arrived (not sent).
 */
public record UsageReport(String origin, long atMs, Map<String, Tenant> tenants, long heardAtMs) {
  public static final int MAX_TENANTS = 256;
  public static final int MAX_REPLICAS = 64;
  public static final long MAX_COUNT = 1_000_000_000_000L;

  /**
   * One tenant's figures on the reporting replica; {@code leasedRequests} and {@code leasedTokens}: what it may still
   * admit before its next report (so a receiver counts them as spent until it hears again); {@code requestsFreeInS} and
   * {@code tokensFreeInS}: seconds until its oldest counted use leaves the minute (-1: none), for the others' Retry-After.
   */
  public record Tenant(long requests, long tokens, long concurrent, long demand, long leasedRequests, long leasedTokens,
                       long requestsFreeInS, long tokensFreeInS) {
  }

  public UsageReport {
    tenants = Map.copyOf(tenants);
  }

  public UsageReport withHeardAt(long nowMs) {
    return new UsageReport(origin, atMs, tenants, nowMs);
  }

  public JsonObject toJson() {
    JsonObject all = new JsonObject();
    tenants.forEach((name, t) -> all.put(name, new JsonObject().put("requests", t.requests()).put("tokens", t.tokens())
        .put("concurrent", t.concurrent()).put("demand", t.demand()).put("leased_requests", t.leasedRequests())
        .put("leased_tokens", t.leasedTokens()).put("requests_free_in_s", t.requestsFreeInS())
        .put("tokens_free_in_s", t.tokensFreeInS())));
    return new JsonObject().put("origin", origin).put("at_ms", atMs).put("tenants", all);
  }

  /** The report in {@code json}, or null when it has no origin or is out of bounds; a malformed tenant entry is left out. */
  public static UsageReport fromJson(JsonObject json) {
    if (json == null || !(json.getValue("origin") instanceof String origin) || origin.isEmpty() || origin.length() > 128) return null;
    if (!(json.getValue("at_ms") instanceof Number at) || !(json.getValue("tenants") instanceof JsonObject all)) return null;
    if (all.size() > MAX_TENANTS) return null;
    Map<String, Tenant> tenants = new LinkedHashMap<>();
    all.forEach(e -> {
      if (e.getKey().length() <= 64 && e.getValue() instanceof JsonObject t && count(t, "requests") >= 0
          && count(t, "tokens") >= 0 && count(t, "concurrent") >= 0 && count(t, "demand") >= 0
          && count(t, "leased_requests") >= 0 && count(t, "leased_tokens") >= 0) {
        tenants.put(e.getKey(), new Tenant(count(t, "requests"), count(t, "tokens"), count(t, "concurrent"), count(t, "demand"),
            count(t, "leased_requests"), count(t, "leased_tokens"), freeIn(t, "requests_free_in_s"), freeIn(t, "tokens_free_in_s")));
      }
    });
    return new UsageReport(origin, at.longValue(), tenants, 0);
  }

  /** Seconds from -1 (none) to 60; -1 for anything else. */
  private static long freeIn(JsonObject t, String field) {
    Object v = t.getValue(field);
    if (!(v instanceof Integer || v instanceof Long)) return -1;
    long n = ((Number) v).longValue();
    return n >= -1 && n <= 60 ? n : -1;
  }

  /** A whole count within bounds, else -1. */
  private static long count(JsonObject t, String field) {
    Object v = t.getValue(field);
    if (!(v instanceof Integer || v instanceof Long)) return -1;
    long n = ((Number) v).longValue();
    return n >= 0 && n <= MAX_COUNT ? n : -1;
  }
}
