package narwhal.router;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.UsageReport;
import narwhal.common.config.TenantConfig;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Each tenant's quotas ({@code tenants.<name>.requests_per_minute}, {@code tokens_per_minute}, {@code max_concurrent}),
 * counted across the cluster's replicas without the request path ever waiting on the cluster. Each replica counts its
 * own use in one-second buckets over the last minute and, every {@link #settle}, hears the others' ({@link UsageReport}
 * on the cluster bus). What is left of a quota is then leased out: each replica takes a share in proportion to the
 * tenant's demand on it, never more than the other replicas' unspent leases (as they last reported them) leave, and
 * admits until its lease is spent; a request refused while some of the quota is left cluster-wide is told to retry
 * after a second, when its replica's lease follows the demand (a burst on one replica of an idle cluster gets its
 * replica's share at once, the rest a second later). A replica heard within the minute but
 * not lately (frozen, cut off), or one the cluster view counts but this replica never heard, is counted as using at
 * least its share of each quota, and its last reported use stays counted for the minute: a partitioned replica enforces
 * its share. Thread-safe: each tenant's figures under that tenant's lock. Time comes from {@code clockMs}.
 */
final class TenantQuotas {
  static final int WINDOW_S = 60;
  /** How often the quotas are leased again and the replicas' reports exchanged. */
  static final long SETTLE_MS = 1_000;
  /** A replica's report older than this is no longer fresh: the replica counts as silent (stopped, frozen, cut off). */
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
  /** The other replicas' last reports (with when they were heard), kept for the quota's minute. */
  private final Map<String, UsageReport> heard = new ConcurrentHashMap<>();
  /** How many replicas the cluster holds (this one included), as the cluster view says; 1 alone. */
  private volatile int members = 1;

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
      if (tenant.requestsPerMinute() > 0 && u.requestsSinceSettle + 1 > u.requests.lease) {
        return new Verdict("requests_per_minute", u.requests.retryAfterS(u.requestsSinceSettle, now));
      }
      if (tenant.tokensPerMinute() > 0 && u.tokensSinceSettle >= u.tokens.lease) {
        return new Verdict("tokens_per_minute", u.tokens.retryAfterS(u.tokensSinceSettle, now));
      }
      if (tenant.maxConcurrent() > 0 && u.concurrent + 1 > u.concurrentLease) {
        return new Verdict("max_concurrent", 1);
      }
      u.requests.counts[u.slot(now)]++;
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

  /**
   * {@code tokens} (prompt and completion) of a request of {@code tenant}; a tenant no longer counted (a reload removed
   * it while the request ran) is not counted again.
   */
  void used(TenantConfig tenant, long tokens) {
    if (tenant.tokensPerMinute() <= 0 || tokens <= 0) return;
    Usage u = usage.get(tenant.name());
    if (u == null) return;
    synchronized (u) {
      long now = clockMs.getAsLong();
      u.roll(now);
      u.tokens.counts[u.slot(now)] += tokens;
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
      return new Headroom(tenant.requestsPerMinute(), Math.max(0, tenant.requestsPerMinute() - u.requests.total()),
          u.requests.resetS(now), tenant.tokensPerMinute(), Math.max(0, tenant.tokensPerMinute() - u.tokens.total()),
          u.tokens.resetS(now));
    }
  }

  /**
   * Another replica's report (already verified). Refused: a report from too far ahead of or behind this replica's clock
   * ({@link ClockBound#MAX_SKEW_MS}), one not newer than the last heard from its replica (a replay), or a 65th replica.
   */
  void heard(UsageReport report) {
    if (report == null) return;
    long now = clockMs.getAsLong();
    if (Math.abs(report.atMs() - now) > ClockBound.MAX_SKEW_MS) return;
    UsageReport last = heard.get(report.origin());
    if (last != null && report.atMs() <= last.atMs()) return;
    if (last == null && heard.size() >= UsageReport.MAX_REPLICAS) return;
    heard.put(report.origin(), report.withHeardAt(now));
  }

  /**
   * Re-leases every quota from the latest counts heard, and returns this replica's own report for the others.
   * {@code members}: the replicas the cluster holds, this one included.
   */
  UsageReport settle(String self, int members) {
    return settle(self, members, null);
  }

  /**
   * As above; {@code configured} (null: not known): the fleet file's tenants; each with a quota is counted (and reported,
   * at most {@value UsageReport#MAX_TENANTS}) from now on, the figures of any other are dropped.
   */
  UsageReport settle(String self, int members, Collection<TenantConfig> configured) {
    long now = clockMs.getAsLong();
    heard.values().removeIf(r -> now - r.heardAtMs() > WINDOW_S * 1000L);
    // the cluster view counts the replicas it sees; one heard within the minute but cut off since still counts
    this.members = Math.max(Math.max(1, members), 1 + heard.size());
    if (configured != null) {
      Set<String> names = new java.util.HashSet<>();
      for (TenantConfig t : configured) {
        if (!t.hasQuota()) continue;
        names.add(t.name());
        Usage u = usageOf(t);
        synchronized (u) {
          u.tenant = t;
        }
      }
      usage.keySet().retainAll(names);
    }
    Map<String, UsageReport.Tenant> mine = new HashMap<>();
    for (Usage u : usage.values()) {
      synchronized (u) {
        u.roll(now);
        long demand = u.demand;
        lease(u, now);
        if (mine.size() < UsageReport.MAX_TENANTS) {
          mine.put(u.tenant.name(), new UsageReport.Tenant(u.requests.own(), u.tokens.own(), u.concurrent, demand,
              (long) Math.ceil(u.requests.lease), (long) Math.ceil(u.tokens.lease), u.requests.freeInS(now), u.tokens.freeInS(now)));
        }
      }
    }
    return new UsageReport(self, now, mine, 0);
  }

  /** Under {@code u}'s lock: what every other replica uses, what is left of each quota, and this replica's lease. */
  private void lease(Usage u, long now) {
    TenantConfig t = u.tenant;
    int n = members;
    Quota requests = u.requests;
    Quota tokens = u.tokens;
    requests.beginLease();
    tokens.beginLease();
    long remoteConcurrent = 0;
    double otherDemand = 0;
    for (UsageReport r : heard.values()) {
      UsageReport.Tenant theirs = r.tenants().get(t.name());
      boolean fresh = now - r.heardAtMs() <= REPORT_TTL_MS;
      long ageS = Math.max(0, (now - r.heardAtMs()) / 1000);
      if (!fresh) {
        // silent since: its last use stays counted, and it may have used up to its share meanwhile
        requests.remote(theirs == null ? 0 : theirs.requests(), 0, t.requestsPerMinute() / (double) n, -1);
        tokens.remote(theirs == null ? 0 : theirs.tokens(), 0, t.tokensPerMinute() / (double) n, -1);
        remoteConcurrent += Math.max(theirs == null ? 0 : theirs.concurrent(), (long) Math.ceil(t.maxConcurrent() / (double) n));
        continue;
      }
      if (theirs == null) {
        otherDemand += IDLE_DEMAND;
        continue;
      }
      requests.remote(theirs.requests(), theirs.leasedRequests(), 0, theirs.requestsFreeInS() - ageS);
      tokens.remote(theirs.tokens(), theirs.leasedTokens(), 0, theirs.tokensFreeInS() - ageS);
      remoteConcurrent += theirs.concurrent();
      otherDemand += theirs.demand() + IDLE_DEMAND;
    }
    // replicas the cluster holds that this one never heard: each may use its share
    int unheard = Math.max(0, n - 1 - heard.size());
    if (unheard > 0) {
      requests.remote(0, 0, unheard * t.requestsPerMinute() / (double) n, -1);
      tokens.remote(0, 0, unheard * t.tokensPerMinute() / (double) n, -1);
      remoteConcurrent += unheard * (long) Math.ceil(t.maxConcurrent() / (double) n);
    }
    // the silent and unheard replicas' shares are claimed above: the rest is shared by demand among those heard
    double ownDemand = u.demand + IDLE_DEMAND;
    double share = ownDemand / (ownDemand + otherDemand);
    requests.endLease(t.requestsPerMinute(), share);
    tokens.endLease(t.tokensPerMinute(), share);
    long concurrentLeft = Math.max(0, t.maxConcurrent() - remoteConcurrent);
    // a reload that lowered the maximum below what runs: nothing more until fewer run
    u.concurrentLease = Math.min(concurrentLeft, u.concurrent + Math.max(0, concurrentLeft - u.concurrent) * share);
    u.requestsSinceSettle = 0;
    u.tokensSinceSettle = 0;
    u.demand = 0;
  }

  private Usage usageOf(TenantConfig tenant) {
    return usage.computeIfAbsent(tenant.name(), name -> {
      Usage u = new Usage(tenant);
      synchronized (u) {
        long now = clockMs.getAsLong();
        u.roll(now);
        lease(u, now);
      }
      return u;
    });
  }

  /** Drops the figures of tenants no longer configured (a reload removed them). */
  void retain(Set<String> tenants) {
    usage.keySet().retainAll(tenants);
  }

  /** How many replicas' reports count, how many replicas the quotas are shared with, and each tenant's figures. */
  JsonObject toJson() {
    JsonObject tenants = new JsonObject();
    long now = clockMs.getAsLong();
    long fresh = heard.values().stream().filter(r -> now - r.heardAtMs() <= REPORT_TTL_MS).count();
    usage.forEach((name, u) -> {
      synchronized (u) {
        u.roll(now);
        tenants.put(name, new JsonObject().put("requests_last_minute", u.requests.total())
            .put("tokens_last_minute", u.tokens.total()).put("concurrent_here", u.concurrent)
            .put("requests_last_minute_here", u.requests.own()).put("tokens_last_minute_here", u.tokens.own()));
      }
    });
    return new JsonObject().put("replicas_heard", 1 + fresh).put("members", members).put("tenants", tenants);
  }

  /**
   * One per-minute quota of one tenant on this replica: its own use in one-second buckets, the others' use and unspent
   * leases as last heard, and this replica's lease.
   */
  private static final class Quota {
    final long[] counts = new long[WINDOW_S];
    /** The second each bucket counts (epoch seconds), shared with the tenant's other quota. */
    final long[] second;
    long remoteUsed;
    long remoteLeased;
    double remoteClaimed;
    /** Seconds until the earliest use another replica reported leaves the minute; -1 when none. */
    long remoteFreeInS;
    double lease;
    /** What is left of the quota after every replica's use, at the last settle. */
    double left;

    Quota(long[] second) {
      this.second = second;
    }

    void beginLease() {
      remoteUsed = 0;
      remoteLeased = 0;
      remoteClaimed = 0;
      remoteFreeInS = -1;
    }

    /** Another replica's {@code used}, its unspent {@code leased}, what it may use unheard ({@code claimed}). */
    void remote(long used, long leased, double claimed, long freeInS) {
      remoteUsed += used;
      remoteLeased += leased;
      remoteClaimed += Math.max(0, claimed - used);
      if (used > 0 && freeInS >= 0) remoteFreeInS = remoteFreeInS < 0 ? freeInS : Math.min(remoteFreeInS, freeInS);
    }

    /** A share of what is left, never more than the others' unspent leases leave. */
    void endLease(long limit, double share) {
      left = Math.max(0, limit - own() - remoteUsed - remoteClaimed);
      lease = Math.min(left * share, Math.max(0, left - remoteLeased));
    }

    long own() {
      long total = 0;
      for (long c : counts) total += c;
      return total;
    }

    /** The cluster's use over the minute as last known: this replica's now and the others' as reported. */
    long total() {
      return own() + remoteUsed;
    }

    /**
     * Seconds until some of the quota frees: 1 while some is left cluster-wide, counting what is only claimed for replicas
     * not heard lately (this replica's lease comes back at the next settle), else until the earliest use this replica or
     * another counted leaves the minute.
     */
    long retryAfterS(long sinceSettle, long nowMs) {
      // left after what the others used, or only claimed for them (unheard, silent): more may free within a second
      if (left + remoteClaimed - sinceSettle >= 1) return 1;
      long mine = freeInS(nowMs);
      long earliest = mine < 0 ? remoteFreeInS : remoteFreeInS < 0 ? mine : Math.min(mine, remoteFreeInS);
      return earliest < 0 ? WINDOW_S : Math.max(1, earliest);
    }

    /** Seconds until this replica's oldest use leaves the minute; -1 when it counts none. */
    long freeInS(long nowMs) {
      long oldest = Long.MAX_VALUE;
      for (int i = 0; i < WINDOW_S; i++) if (counts[i] > 0) oldest = Math.min(oldest, second[i]);
      return oldest == Long.MAX_VALUE ? -1 : Math.max(1, oldest + WINDOW_S - nowMs / 1000);
    }

    /** Seconds until every use this replica counts now has left the minute (the quota whole again); 0 when none. */
    long resetS(long nowMs) {
      long newest = Long.MIN_VALUE;
      for (int i = 0; i < WINDOW_S; i++) if (counts[i] > 0) newest = Math.max(newest, second[i]);
      return newest == Long.MIN_VALUE ? 0 : Math.max(1, newest + WINDOW_S - nowMs / 1000);
    }
  }

  /** One tenant's counts on this replica and its leases since the last settle. */
  private static final class Usage {
    TenantConfig tenant;
    /** The second each bucket counts (epoch seconds). */
    final long[] second = new long[WINDOW_S];
    final Quota requests = new Quota(second);
    final Quota tokens = new Quota(second);
    int concurrent;
    long demand;
    long requestsSinceSettle;
    long tokensSinceSettle;
    double concurrentLease;

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
          requests.counts[i] = 0;
          tokens.counts[i] = 0;
          second[i] = expected;
        }
      }
    }
  }
}
