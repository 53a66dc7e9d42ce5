package narwhal.router;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.core.spi.metrics.HttpServerMetrics;
import io.vertx.core.spi.metrics.VertxMetrics;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Router issue 1: a connection accepted before Vert.x has created the server's metrics has no socket metric
 * while its HTTP connection has the server metrics. {@link SocketMetricDropped} puts the first connection in
 * exactly that state; unguarded, Micrometer throws in {@code requestBegin} and the request is never answered. And
 * {@code metrics.vertx_http} switches Vert.x's HTTP series.
 */
@Timeout(30)
class GuardedMetricsTest {

  @Test
  void aConnectionWithoutSocketMetricIsServed() throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Vertx vertx = Vertx.builder().with(new VertxOptions().setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true)))
        .withMetrics(new GuardedMetricsFactory(new SocketMetricDropped(new MicrometerMetricsFactory(registry)))).build();
    try {
      HttpServer server = RouterHarness.await(vertx.createHttpServer().requestHandler(r -> r.response().end("ok")).listen(0));
      assertTrue(get(server.actualPort()).startsWith("HTTP/1.1 200"), "the connection without a socket metric is answered");
      assertTrue(get(server.actualPort()).startsWith("HTTP/1.1 200"), "the next connection is answered");
      assertTrue(registry.scrape().contains("vertx_http_server_requests_total"), "requests on measured connections are counted");
    } finally {
      RouterHarness.await(vertx.close());
    }
  }

  /** {@code metrics.vertx_http}: off, Vert.x's HTTP series are not made (requests are still served); on, they are. */
  @Test
  void vertxHttpMetricsAreSwitchable() throws Exception {
    for (boolean http : new boolean[] {false, true}) {
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      Vertx vertx = Vertx.builder().with(new VertxOptions().setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true)))
          .withMetrics(GuardedMetricsFactory.micrometer(registry, http)).build();
      try {
        HttpServer server = RouterHarness.await(vertx.createHttpServer().requestHandler(r -> r.response().end("ok")).listen(0));
        assertTrue(get(server.actualPort()).startsWith("HTTP/1.1 200"), "served with vertx_http " + http);
        String scrape = registry.scrape();
        assertEquals(http, scrape.contains("vertx_http_server_requests_total"), "vertx_http " + http + ":\n" + scrape);
        assertTrue(scrape.contains("vertx_"), "the other Vert.x series stay: " + scrape);
      } finally {
        RouterHarness.await(vertx.close());
      }
    }
  }

  private static String get(int port) throws Exception {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      socket.setSoTimeout(10_000);
      socket.getOutputStream().write("GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
    }
  }

  /** Metrics whose HTTP server gives its first connection no socket metric, as the bind race does. */
  private record SocketMetricDropped(VertxMetricsFactory delegate) implements VertxMetricsFactory {
    @Override
    public VertxMetrics metrics(VertxOptions options) {
      VertxMetrics metrics = delegate.metrics(options);
      return proxy(VertxMetrics.class, metrics, (m, args) -> {
        Object result = m.invoke(metrics, args);
        if (!m.getName().equals("createHttpServerMetrics") || result == null) return result;
        AtomicBoolean dropped = new AtomicBoolean();
        return proxy(HttpServerMetrics.class, result, (sm, sargs) ->
            sm.getName().equals("connected") && sargs.length == 2 && sargs[0] instanceof SocketAddress
                && dropped.compareAndSet(false, true) ? null : sm.invoke(result, sargs));
      });
    }

    @Override
    public io.vertx.core.metrics.MetricsOptions newOptions(io.vertx.core.metrics.MetricsOptions options) {
      return delegate.newOptions(options);
    }

    private interface Call {
      Object apply(Method method, Object[] args) throws Exception;
    }

    private static <T> T proxy(Class<T> type, Object target, Call call) {
      InvocationHandler handler = (p, method, args) -> {
        try {
          return call.apply(method, args == null ? new Object[0] : args);
        } catch (InvocationTargetException e) {
          throw e.getCause();
        }
      };
      return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
    }
  }
}
