package narwhal.router;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Meters cached per tag set count into the very series the registry exports, including ones first seen late. */
class RouterMetricsTest {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final RouterMetrics metrics = new RouterMetrics(registry, () -> 3,
      List.of(new EngineConfig("P0", "http://127.0.0.1:9/p0", Role.PREFILL, "", "")));

  private double counter(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  @Test
  void labelledCountersCountIntoTheirSeries() {
    metrics.failed("stream_error");
    metrics.failed("stream_error");
    metrics.failed("no_engine");
    metrics.expired("request_deadline");
    metrics.rejected("in_flight_limit");
    metrics.attemptFailure("decode", "first_token_timeout");
    metrics.attemptFailure("decode", "first_token_timeout");
    metrics.configReload(false);
    assertEquals(2, counter("narwhal.failed", "reason", "stream_error"));
    assertEquals(1, counter("narwhal.failed", "reason", "no_engine"));
    assertEquals(1, counter("narwhal.expired", "reason", "request_deadline"));
    assertEquals(1, counter("narwhal.rejected", "reason", "in_flight_limit"));
    assertEquals(2, counter("narwhal.attempt.failures", "phase", "decode", "reason", "first_token_timeout"));
    assertEquals(0, counter("narwhal.attempt.failures", "phase", "prefill", "reason", "first_token_timeout"));
    assertEquals(1, counter("narwhal.config.reloads", "outcome", "refused"));
    assertEquals(0, counter("narwhal.config.reloads", "outcome", "applied"));
  }

  @Test
  void aReasonFirstSeenLateIsRegisteredOnceWithItsHelpText() {
    metrics.failed("something_new");
    metrics.failed("something_new");
    assertEquals(2, counter("narwhal.failed", "reason", "something_new"));
    String text = registry.scrape();
    assertTrue(text.contains("narwhal_failed_total{reason=\"something_new\"} 2.0"), text);
    assertTrue(text.contains("# HELP narwhal_failed_total requests failed, by reason"), text);
  }

  @Test
  void residentGaugesFollowReservationsPerEngineAndPhase() {
    metrics.resident("P0", Phase.PREFILL, 1);
    metrics.resident("P0", Phase.PREFILL, 1);
    metrics.resident("P0", Phase.PREFILL, -1);
    metrics.resident("D9", Phase.DECODE, 1);
    assertEquals(1, registry.get("narwhal.resident.requests").tags("iid", "P0", "phase", "prefill").gauge().value());
    assertEquals(0, registry.get("narwhal.resident.requests").tags("iid", "P0", "phase", "decode").gauge().value());
    assertEquals(1, registry.get("narwhal.resident.requests").tags("iid", "D9", "phase", "decode").gauge().value());
  }

  @Test
  void aRemovedEnginesSeriesAreDroppedOnceItsLastLegEnds() {
    metrics.resident("P0", Phase.DECODE, 1);
    metrics.track(List.of(new EngineConfig("P1", "http://127.0.0.1:9/p1", Role.PREFILL, "", "")));
    assertTrue(registry.scrape().contains("iid=\"P0\""), "a leg is still on the removed engine");
    metrics.resident("P0", Phase.DECODE, -1);
    String text = registry.scrape();
    assertFalse(text.contains("iid=\"P0\""), text);
    assertTrue(text.contains("narwhal_resident_requests{iid=\"P1\",phase=\"prefill\"} 0.0"), text);
    metrics.track(List.of(new EngineConfig("P0", "http://127.0.0.1:9/p0", Role.PREFILL, "", "")));
    metrics.resident("P0", Phase.PREFILL, 1);
    assertTrue(registry.scrape().contains("narwhal_resident_requests{iid=\"P0\",phase=\"prefill\"} 1.0"),
        "an engine listed again counts into a series again");
  }
}
