package narwhal.router;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;

/** {@code GET /metrics}: the replica's registry in the Prometheus text format (docs/metrics.md); empty for another registry. */
final class MetricsRoute implements Handler<RoutingContext> {
  private final MeterRegistry registry;

  MetricsRoute(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void handle(RoutingContext rc) {
    String text = registry instanceof PrometheusMeterRegistry prometheus ? prometheus.scrape() : "";
    rc.response().putHeader("content-type", "text/plain; version=0.0.4; charset=utf-8").end(text);
  }
}
