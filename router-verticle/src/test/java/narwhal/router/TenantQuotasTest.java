package narwhal.router;

import narwhal.common.bus.UsageReport;
import narwhal.common.config.TenantConfig;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link TenantQuotas} on an injected clock: each quota refuses past its limit and frees as the minute slides, the
 * headers' figures follow, and replicas that exchange their reports share one quota between them; one that hears
 * nobody while the cluster holds others enforces its share only.
 */
class TenantQuotasTest {
  private final AtomicLong now = new AtomicLong(1_000_000_000L);

  private static TenantConfig tenant(long rpm, long tpm, int concurrent) {
    return new TenantConfig("team", "", "", "normal", 1, rpm, tpm, concurrent);
  }

  @Test
  void requestsPerMinuteRefusePastTheLimitUntilTheMinuteSlides() {
    TenantQuotas quotas = new TenantQuotas(now::get);
    TenantConfig t = tenant(5, 0, 0);
    for (int i = 0; i < 5; i++) {
      assertTrue(quotas.admit(t).admitted(), "request " + i);
      quotas.ended(t);
      now.addAndGet(1_000);
      quotas.settle("r1", 1);
    }
    TenantQuotas.Verdict over = quotas.admit(t);
    assertEquals("requests_per_minute", over.over());
    assertEquals(55, over.retryAfterS(), "the oldest request leaves the minute in 55 s");
    assertEquals(0, quotas.headroom(t).remainingRequests());
    now.addAndGet(55_000);
    quotas.settle("r1", 1);
    assertTrue(quotas.admit(t).admitted(), "the first request left the minute");
    assertFalse(quotas.admit(t).admitted(), "only one did");
  }

  @Test
  void tokensPerMinuteCountWhatTheEnginesReportedAndRefuseOnceSpent() {
    TenantQuotas quotas = new TenantQuotas(now::get);
    TenantConfig t = tenant(0, 100, 0);
    assertTrue(quotas.admit(t).admitted());
    quotas.used(t, 60);
    quotas.ended(t);
    assertTrue(quotas.admit(t).admitted(), "40 tokens left");
    quotas.used(t, 60);
    quotas.ended(t);
    TenantQuotas.Verdict over = quotas.admit(t);
    assertEquals("tokens_per_minute", over.over());
    TenantQuotas.Headroom headroom = quotas.headroom(t);
    assertEquals(100, headroom.limitTokens());
    assertEquals(0, headroom.remainingTokens());
    assertEquals(60, headroom.resetTokensS());
    assertEquals(0, headroom.limitRequests(), "no request quota: its headers are left out");
  }

  @Test
  void concurrentRequestsAreCountedUntilTheyEnd() {
    TenantQuotas quotas = new TenantQuotas(now::get);
    TenantConfig t = tenant(0, 0, 2);
    assertTrue(quotas.admit(t).admitted());
    assertTrue(quotas.admit(t).admitted());
    assertEquals("max_concurrent", quotas.admit(t).over());
    quotas.ended(t);
    assertTrue(quotas.admit(t).admitted(), "one ended: one more runs");
    assertNull(quotas.headroom(t), "no request or token quota: no headers");
  }

  @Test
  void threeReplicasExchangingReportsAdmitNoMoreThanTheQuotaBetweenThem() {
    List<TenantQuotas> replicas = List.of(new TenantQuotas(now::get), new TenantQuotas(now::get), new TenantQuotas(now::get));
    TenantConfig t = tenant(300, 0, 0);
    int admitted = 0;
    // a flood on every replica, most of it on the first: 120 s of requests, the reports exchanged every second
    for (int second = 0; second < 120; second++) {
      for (int i = 0; i < replicas.size(); i++) {
        int asks = i == 0 ? 40 : 10;
        for (int k = 0; k < asks; k++) {
          if (replicas.get(i).admit(t).admitted()) {
            admitted++;
            replicas.get(i).ended(t);
          }
        }
      }
      now.addAndGet(1_000);
      List<UsageReport> reports = new java.util.ArrayList<>();
      for (int i = 0; i < replicas.size(); i++) reports.add(replicas.get(i).settle("r" + i, 3));
      for (int i = 0; i < replicas.size(); i++) {
        for (int j = 0; j < replicas.size(); j++) if (i != j) replicas.get(i).heard(reports.get(j));
      }
    }
    // the window of the last 60 s holds at most the quota, and two minutes at most twice it
    assertTrue(admitted <= 600, "at most two minutes' quota in two minutes: " + admitted);
    assertTrue(admitted >= 570, "within 5 % of it: " + admitted);
  }

  @Test
  void aReplicaThatHearsNobodyWhileTheClusterHoldsThreeEnforcesItsShare() {
    TenantQuotas alone = new TenantQuotas(now::get);
    TenantConfig t = tenant(300, 0, 0);
    alone.settle("r0", 3);
    int admitted = 0;
    for (int k = 0; k < 300; k++) if (alone.admit(t).admitted()) admitted++;
    assertEquals(100, admitted, "a third of the quota while the other two are silent");
  }

  @Test
  void aReplicaCutOffFromTheOthersItHeardThisMinuteEnforcesItsShare() {
    TenantQuotas cut = new TenantQuotas(now::get);
    TenantConfig t = tenant(300, 0, 0);
    cut.settle("r0", 3);
    cut.heard(new UsageReport("r1", now.get(), java.util.Map.of(), 0));
    cut.heard(new UsageReport("r2", now.get(), java.util.Map.of(), 0));
    now.addAndGet(10_000);
    // partitioned: the cluster view counts this replica alone, and nobody's report arrives any more
    cut.settle("r0", 1);
    int admitted = 0;
    for (int k = 0; k < 300; k++) if (cut.admit(t).admitted()) admitted++;
    assertEquals(100, admitted, "the two replicas heard within the minute still count: a third of the quota");
    now.addAndGet(61_000);
    cut.settle("r0", 1);
    for (int k = 0; k < 300; k++) if (cut.admit(t).admitted()) admitted++;
    assertTrue(admitted > 250, "a minute later it is alone: the whole quota, " + admitted);
  }
}
