package narwhal.router;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every metric name of docs/metrics.md is exported from start, zeros included, with help text. */
@Timeout(60)
class MetricsExpositionTest {
  static final List<String> CONTRACT_SERIES = List.of(
      "narwhal_offered_total ", "narwhal_served_total ", "narwhal_failed_total{reason=\"stream_error\"}",
      "narwhal_expired_total{reason=\"request_deadline\"}", "narwhal_cancelled_total ", "narwhal_rejected_total{model=\"\",reason=\"in_flight_limit\"}",
      "narwhal_invalid_requests_total ", "narwhal_prefill_attempts_total ", "narwhal_decode_attempts_total ",
      "narwhal_retry_attempts_total ", "narwhal_attempt_failures_total{phase=\"decode\",reason=\"first_token_timeout\"}",
      "narwhal_served_after_retry_total ", "narwhal_retry_credits ", "narwhal_retry_denied_total ",
      "narwhal_ttft_seconds_count ", "narwhal_first_byte_seconds_count ", "narwhal_ejected{iid=\"D0\"}",
      "narwhal_engine_quarantined{iid=\"D0\"}", "narwhal_engine_held{iid=\"D0\"}",
      "narwhal_engine_ejections_total{cause=\"stream\",iid=\"D0\"}",
      "narwhal_engine_probes_total{iid=\"D0\",kind=\"inference\",outcome=\"passed\"}",
      "narwhal_engine_readmissions_total{evidence=\"inference_probe\",iid=\"D0\"}",
      "narwhal_engine_breaker_streak{class=\"stream\",iid=\"D0\"}", "narwhal_resident_requests{iid=\"P0\",phase=\"prefill\"}",
      "narwhal_config_reloads_total{outcome=\"refused\"}");

  @Test
  void everyContractSeriesExistsFromStart() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      String text = h.get("/metrics").body();
      for (String series : CONTRACT_SERIES) assertTrue(text.contains("\n" + series), series + " missing from\n" + text);
      for (String family : List.of("narwhal_offered_total", "narwhal_ttft_seconds", "narwhal_engine_breaker_streak")) {
        assertTrue(text.contains("# HELP " + family + " ") && !text.contains("# HELP " + family + " \n"), "help text for " + family);
      }
      assertTrue(text.contains("vertx_http_server_requests_total") || text.contains("vertx_http_server_active_requests"),
          "Vert.x's own HTTP metrics are exported");
      assertTrue(text.contains("vertx_eventbus_"), "Vert.x event-bus metrics are exported");
    }
  }
}
