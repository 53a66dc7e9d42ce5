package narwhal.router;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.UsageReport;
import narwhal.common.config.TenantConfig;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Each tenant's quotas ({@code tenants.<name>.requests_per_minute}, {@code tokens_per_minute}, {@code max_concurrent}),
 * counted across the cluster's replicas without the request path ever waiting on the cluster. Each replica counts its
 * own use in one-second buckets over the last minute and, every {@link #settle}, hears the others' ({@link UsageReport}
 * on the cluster bus): what is left of a quota is then leased out, each replica taking a share in proportion to the
 * tenant's demand on it, never more than the other replicas' unspent leases (as they last reported them) leave, and a
 * replica admits until its lease is spent. A replica that hears from fewer replicas than the cluster holds, or than it
 * heard within the last minute (its guard open, a partition), leases as if the silent ones asked as much as itself:
 * each enforces its share. Thread-safe: each tenant's figures under that tenant's lock. Time comes from {@code clockMs}.
 */
final class TenantQuotas {
  static final int WINDOW_S = 60;
  /** How often the quotas are leased again and the replicas' reports exchanged. */
  static final long SETTLE_MS = 1_000;
  /** A replica's report older than this no longer counts (it stopped, froze or was cut off). */
  static final long REPORT_TTL_MS = 3_000;
  /** The demand a replica that asked for nothing is counted with, so it still gets a lease when its first request comes. */
  private static final double IDLE_DEMAND = 0.5;

  /** What a quota said: {@code over} names the quota spent (null: admitted); {@code retryAfterS} when it refused. */
  record Verdict(String over, long retryAfterS) {
    static final Verdict ADMITTED = new Verdict(null, 0);

    boolean admitted() {
      return over == null;
    }
  }

  /** What the {@code x-ratelimit-*} headers say of a tenant now. */
  record Headroom(long limitRequests, long remainingRequests, long resetRequestsS, long limitTokens, long remainingTokens,
                  long resetTokensS) {
  }

  private final LongSupplier clockMs;
  private final Map<String, Usage> usage = new ConcurrentHashMap<>();
  /** The other replicas' last reports, by replica id. */
  private final Map<String, UsageReport> heard = new ConcurrentHashMap<>();
  /** How many replicas the cluster holds (this one included), as the cluster view says; 1 alone. */
  private volatile int members = 1;
  /** When each replica was last heard: one heard within the quota's minute still counts as a member (a partition). */
  private final Map<String, Long> lastHeard = new ConcurrentHashMap<>();

  TenantQuotas(LongSupplier clockMs) {
    this.clockMs = clockMs;
  }

  /** Counts a request of {@code tenant} in, or says which quota it would go past. */
  Verdict admit(TenantConfig tenant) {
    if (!tenant.hasQuota()) return Verdict.ADMITTED;
    Usage u = usageOf(tenant);
    synchronized (u) {
      u.tenant = tenant;
      long now = clockMs.getAsLong();
      u.roll(now);
      u.demand++;
      if (tenant.requestsPerMinute() > 0 && u.requestsSinceSettle + 1 > u.requestLease) {
        return new Verdict("requests_per_minute", u.retryAfterS(u.requests, now));
      }
      if (tenant.tokensPerMinute() > 0 && u.tokensSinceSettle >= u.tokenLease) {
        return new Verdict("tokens_per_minute", u.retryAfterS(u.tokens, now));
      }
      if (tenant.maxConcurrent() > 0 && u.concurrent + 1 > u.concurrentLease) {
        return new Verdict("max_concurrent", 1);
      }
      u.requests[u.slot(now)]++;
      u.requestsSinceSettle++;
      u.concurrent++;
      return Verdict.ADMITTED;
    }
  }

  /** An admitted request of {@code tenant} has ended. */
  void ended(TenantConfig tenant) {
    if (!tenant.hasQuota()) return;
    Usage u = usage.get(tenant.name());
    if (u == null) return;
    synchronized (u) {
      if (u.concurrent > 0) u.concurrent--;
    }
  }

  /** {@code tokens} (prompt and completion, from the engine's usage) of a request of {@code tenant}. */
  void used(TenantConfig tenant, long tokens) {
    if (tenant.tokensPerMinute() <= 0 || tokens <= 0) return;
    Usage u = usageOf(tenant);
    synchronized (u) {
      long now = clockMs.getAsLong();
      u.roll(now);
      u.tokens[u.slot(now)] += tokens;
      u.tokensSinceSettle += tokens;
    }
  }

  /** The headroom of {@code tenant} for its answer's headers; null when it has no request or token quota. */
  Headroom headroom(TenantConfig tenant) {
    if (tenant.requestsPerMinute() <= 0 && tenant.tokensPerMinute() <= 0) return null;
    Usage u = usageOf(tenant);
    synchronized (u) {
      long now = clockMs.getAsLong();
      u.roll(now);
      long requests = u.sum(u.requests) + u.remoteRequests;
      long tokens = u.sum(u.tokens) + u.remoteTokens;
      return new Headroom(tenant.requestsPerMinute(), Math.max(0, tenant.requestsPerMinute() - requests),
          u.resetS(u.requests, now), tenant.tokensPerMinute(), Math.max(0, tenant.tokensPerMinute() - tokens),
          u.resetS(u.tokens, now));
    }
  }

  /** The other replicas' report {@code report} (already verified), from replica {@code origin}. */
  void heard(UsageReport report) {
    if (report == null) return;
    if (heard.size() >= UsageReport.MAX_REPLICAS && !heard.containsKey(report.origin())) return;
    long now = clockMs.getAsLong();
    heard.put(report.origin(), report.withHeardAt(now));
    if (lastHeard.size() < UsageReport.MAX_REPLICAS || lastHeard.containsKey(report.origin())) lastHeard.put(report.origin(), now);
  }

  /**
   * Re-leases every quota from the latest counts heard, and returns this replica's own report for the others.
   * {@code members}: the replicas the cluster holds, this one included.
   */
  UsageReport settle(String self, int members) {
    return settle(self, members, java.util.List.of());
  }

  /** As above; {@code configured}: the tenants of the fleet file, each with a quota counted (and reported) from now on. */
  UsageReport settle(String self, int members, java.util.Collection<TenantConfig> configured) {
    long at = clockMs.getAsLong();
    lastHeard.values().removeIf(t -> at - t > WINDOW_S * 1000L || t > at + REPORT_TTL_MS);
    // a replica cut off (a partition, the guard open) sees fewer members: those heard within the minute still count
    this.members = Math.max(Math.max(1, members), 1 + lastHeard.size());
    for (TenantConfig t : configured) {
      if (!t.hasQuota()) continue;
      Usage u = usageOf(t);
      synchronized (u) {
        u.tenant = t;
      }
    }
    long now = clockMs.getAsLong();
    heard.values().removeIf(r -> now - r.heardAtMs() > REPORT_TTL_MS || r.heardAtMs() > now + REPORT_TTL_MS);
    Map<String, UsageReport.Tenant> mine = new HashMap<>();
    for (Usage u : usage.values()) {
      synchronized (u) {
        u.roll(now);
        long demand = u.demand;
        lease(u);
        mine.put(u.tenant.name(), new UsageReport.Tenant(u.sum(u.requests), u.sum(u.tokens), u.concurrent, demand,
            (long) Math.ceil(u.requestLease), (long) Math.ceil(u.tokenLease)));
      }
    }
    return new UsageReport(self, now, mine, 0);
  }

  /** Under {@code u}'s lock: what is left of each quota, after every replica's use, and this replica's share of it. */
  private void lease(Usage u) {
    TenantConfig t = u.tenant;
    long remoteRequests = 0;
    long remoteTokens = 0;
    long remoteConcurrent = 0;
    long leasedRequests = 0;
    long leasedTokens = 0;
    double otherDemand = 0;
    int reporting = 1;
    for (UsageReport r : heard.values()) {
      UsageReport.Tenant theirs = r.tenants().get(t.name());
      reporting++;
      if (theirs == null) {
        otherDemand += IDLE_DEMAND;
        continue;
      }
      remoteRequests += theirs.requests();
      remoteTokens += theirs.tokens();
      // what it may have used since its report: its lease until its next one
      leasedRequests += theirs.leasedRequests();
      leasedTokens += theirs.leasedTokens();
      remoteConcurrent += theirs.concurrent();
      otherDemand += theirs.demand() + IDLE_DEMAND;
    }
    double ownDemand = u.demand + IDLE_DEMAND;
    // the replicas the cluster holds but this one did not hear: counted as asking as much as this one
    otherDemand += Math.max(0, members - reporting) * ownDemand;
    double share = ownDemand / (ownDemand + otherDemand);
    u.remoteRequests = remoteRequests;
    u.remoteTokens = remoteTokens;
    // a share of what is left, and never more than what the others' unspent leases leave
    long requestsLeft = Math.max(0, t.requestsPerMinute() - u.sum(u.requests) - remoteRequests);
    long tokensLeft = Math.max(0, t.tokensPerMinute() - u.sum(u.tokens) - remoteTokens);
    u.requestLease = Math.min(requestsLeft * share, Math.max(0, requestsLeft - leasedRequests));
    u.tokenLease = Math.min(tokensLeft * share, Math.max(0, tokensLeft - leasedTokens));
    u.concurrentLease = u.concurrent + Math.max(0, t.maxConcurrent() - u.concurrent - remoteConcurrent) * share;
    u.requestsSinceSettle = 0;
    u.tokensSinceSettle = 0;
    u.demand = 0;
  }

  private Usage usageOf(TenantConfig tenant) {
    return usage.computeIfAbsent(tenant.name(), n -> {
      Usage u = new Usage(tenant);
      synchronized (u) {
        u.roll(clockMs.getAsLong());
        lease(u);
      }
      return u;
    });
  }

  /** Drops the figures of tenants no longer configured (a reload removed them). */
  void retain(java.util.Set<String> tenants) {
    usage.keySet().retainAll(tenants);
  }

  /** Each tenant's figures on this replica and heard from the others, for {@code /narwhal/state}. */
  JsonObject toJson() {
    JsonObject json = new JsonObject();
    long nowMs = clockMs.getAsLong();
    long fresh = heard.values().stream().filter(r -> nowMs - r.heardAtMs() <= REPORT_TTL_MS).count();
    JsonObject out = new JsonObject().put("replicas_heard", 1 + fresh).put("members", members).put("tenants", json);
    long now = clockMs.getAsLong();
    usage.forEach((name, u) -> {
      synchronized (u) {
        u.roll(now);
        json.put(name, new JsonObject().put("requests_last_minute", u.sum(u.requests) + u.remoteRequests)
            .put("tokens_last_minute", u.sum(u.tokens) + u.remoteTokens).put("concurrent_here", u.concurrent)
            .put("requests_last_minute_here", u.sum(u.requests)).put("tokens_last_minute_here", u.sum(u.tokens)));
      }
    });
    return out;
  }

  /** One tenant's counts on this replica: a minute of one-second buckets, and its leases since the last settle. */
  private static final class Usage {
    TenantConfig tenant;
    final long[] requests = new long[WINDOW_S];
    final long[] tokens = new long[WINDOW_S];
    /** The second each bucket counts (epoch seconds). */
    final long[] second = new long[WINDOW_S];
    int concurrent;
    long demand;
    long requestsSinceSettle;
    long tokensSinceSettle;
    double requestLease;
    double tokenLease;
    double concurrentLease;
    long remoteRequests;
    long remoteTokens;

    Usage(TenantConfig tenant) {
      this.tenant = tenant;
    }

    int slot(long nowMs) {
      return (int) Math.floorMod(nowMs / 1000, (long) WINDOW_S);
    }

    /** Empties the buckets of seconds that left the window: slot i counts the latest second s' <= now with s' = i mod 60. */
    void roll(long nowMs) {
      long s = nowMs / 1000;
      for (int i = 0; i < WINDOW_S; i++) {
        long expected = s - Math.floorMod(s - i, (long) WINDOW_S);
        if (second[i] != expected) {
          requests[i] = 0;
          tokens[i] = 0;
          second[i] = expected;
        }
      }
    }

    long sum(long[] counts) {
      long total = 0;
      for (long c : counts) total += c;
      return total;
    }

    /** Seconds until the oldest second with use leaves the window, freeing some of the quota (at least 1). */
    long retryAfterS(long[] counts, long nowMs) {
      long oldest = Long.MAX_VALUE;
      for (int i = 0; i < WINDOW_S; i++) if (counts[i] > 0) oldest = Math.min(oldest, second[i]);
      return oldest == Long.MAX_VALUE ? 1 : Math.max(1, oldest + WINDOW_S - nowMs / 1000);
    }

    /** Seconds until every use counted now has left the window (the quota whole again); 0 when none is counted. */
    long resetS(long[] counts, long nowMs) {
      long newest = Long.MIN_VALUE;
      for (int i = 0; i < WINDOW_S; i++) if (counts[i] > 0) newest = Math.max(newest, second[i]);
      return newest == Long.MIN_VALUE ? 0 : Math.max(1, newest + WINDOW_S - nowMs / 1000);
    }
  }
}
