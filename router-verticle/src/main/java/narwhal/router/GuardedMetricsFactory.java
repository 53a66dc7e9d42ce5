package narwhal.router;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.VertxOptions;
import io.vertx.core.Vertx;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonObject;
import io.vertx.core.metrics.MetricsOptions;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.core.spi.metrics.ClientMetrics;
import io.vertx.core.spi.metrics.DatagramSocketMetrics;
import io.vertx.core.spi.metrics.EventBusMetrics;
import io.vertx.core.spi.metrics.HttpClientMetrics;
import io.vertx.core.spi.metrics.HttpServerMetrics;
import io.vertx.core.spi.metrics.PoolMetrics;
import io.vertx.core.spi.metrics.TCPMetrics;
import io.vertx.core.spi.metrics.VertxMetrics;
import io.vertx.core.spi.observability.HttpRequest;
import io.vertx.core.spi.observability.HttpResponse;
import io.vertx.micrometer.MicrometerMetricsFactory;

import java.util.logging.Filter;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Vert.x Micrometer metrics whose HTTP server side tolerates a connection that has no socket metric.
 * Vert.x creates a server's metrics in the bind listener, after the acceptor is live; a connection accepted in
 * between gets no socket metric while its HTTP connection does get the server metrics, and Micrometer's
 * {@code requestBegin} then throws on the missing metric and the request is never handled. Such a connection's
 * requests are served and left out of the Vert.x HTTP series. With {@code metrics.vertx_http} false
 * ({@link narwhal.common.config.MetricsConfig}) no HTTP server or client metrics are made at all. Micrometer's
 * warning about Vert.x's own gauges registered again is not logged ({@link VertxGaugeRepeats}).
 */
public final class GuardedMetricsFactory implements VertxMetricsFactory {
  private final VertxMetricsFactory delegate;
  private final boolean http;

  public GuardedMetricsFactory(VertxMetricsFactory delegate) {
    this(delegate, true);
  }

  public GuardedMetricsFactory(VertxMetricsFactory delegate, boolean http) {
    this.delegate = delegate;
    this.http = http;
  }

  /** Micrometer metrics into {@code registry}, guarded, with Vert.x's HTTP server and client metrics or without. */
  public static GuardedMetricsFactory micrometer(MeterRegistry registry, boolean http) {
    return new GuardedMetricsFactory(new MicrometerMetricsFactory(registry), http);
  }

  /** As {@link #micrometer(MeterRegistry, boolean)} with the HTTP metrics. */
  public static GuardedMetricsFactory micrometer(MeterRegistry registry) {
    return micrometer(registry, true);
  }

  @Override
  public VertxMetrics metrics(VertxOptions options) {
    VertxGaugeRepeats.install();
    VertxMetrics metrics = delegate.metrics(options);
    return metrics == null ? null : new Guarded(metrics, http);
  }

  @Override
  public MetricsOptions newOptions() {
    return delegate.newOptions();
  }

  @Override
  public MetricsOptions newOptions(MetricsOptions options) {
    return delegate.newOptions(options);
  }

  @Override
  public MetricsOptions newOptions(JsonObject json) {
    return delegate.newOptions(json);
  }

  private record Guarded(VertxMetrics d, boolean http) implements VertxMetrics {
    @Override public EventBusMetrics createEventBusMetrics() { return d.createEventBusMetrics(); }
    @SuppressWarnings("unchecked")
    @Override public HttpServerMetrics<?, ?, ?> createHttpServerMetrics(HttpServerOptions options, SocketAddress local) {
      if (!http) return null;
      HttpServerMetrics<?, ?, ?> server = d.createHttpServerMetrics(options, local);
      return server == null ? null : new GuardedHttpServerMetrics((HttpServerMetrics<Object, Object, Object>) server);
    }
    @Override public ClientMetrics<?, ?, ?> createClientMetrics(SocketAddress remote, String type, String namespace) {
      return d.createClientMetrics(remote, type, namespace);
    }
    @Override public HttpClientMetrics<?, ?, ?> createHttpClientMetrics(HttpClientOptions options) {
      return http ? d.createHttpClientMetrics(options) : null;
    }
    @Override public TCPMetrics<?> createNetServerMetrics(NetServerOptions options, SocketAddress local) { return d.createNetServerMetrics(options, local); }
    @Override public TCPMetrics<?> createNetClientMetrics(NetClientOptions options) { return d.createNetClientMetrics(options); }
    @Override public DatagramSocketMetrics createDatagramSocketMetrics(DatagramSocketOptions options) { return d.createDatagramSocketMetrics(options); }
    @Override public PoolMetrics<?, ?> createPoolMetrics(String type, String name, int maxSize) { return d.createPoolMetrics(type, name, maxSize); }
    @Override public void vertxCreated(Vertx vertx) { d.vertxCreated(vertx); }
    @Override public boolean isMetricsEnabled() { return d.isMetricsEnabled(); }
    @Override public void close() { d.close(); }
  }

  /**
   * Vert.x's Micrometer metrics register a gauge again for every connection, request, connection pool and event-bus
   * handler ({@code vertx.http.client.active.connections}, {@code vertx.pool.in.use}, ...): they keep one counter
   * per meter id, so the values are exact, and Micrometer hands back the gauge it has. Micrometer logs the first
   * such registration of the process as a WARNING (the later ones at debug level), so every start warned about a
   * meter nobody registered wrongly. This filter on Micrometer's registry logger drops that record for a
   * {@code vertx.*} meter; the record for any other meter passes, as does everything else the logger says.
   */
  static final class VertxGaugeRepeats implements Filter {
    /** Held here: the logging framework keeps loggers weakly, and a collected logger would lose its filter. */
    private static final Logger REGISTRY_LOG = Logger.getLogger("io.micrometer.core.instrument.MeterRegistry");
    private static final String VERTX_GAUGE_AGAIN = "has been already registered (MeterId{name='vertx.";

    private final Filter next;

    private VertxGaugeRepeats(Filter next) {
      this.next = next;
    }

    /** Puts the filter on Micrometer's registry logger, once, in front of any filter it had. */
    static synchronized void install() {
      Filter current = REGISTRY_LOG.getFilter();
      if (!(current instanceof VertxGaugeRepeats)) REGISTRY_LOG.setFilter(new VertxGaugeRepeats(current));
    }

    @Override
    public boolean isLoggable(LogRecord record) {
      String message = record.getMessage();
      if (message != null && message.contains(VERTX_GAUGE_AGAIN)) return false;
      return next == null || next.isLoggable(record);
    }
  }

  /** Skips every call whose socket, request or WebSocket metric is missing. */
  record GuardedHttpServerMetrics(HttpServerMetrics<Object, Object, Object> d) implements HttpServerMetrics<Object, Object, Object> {
    @Override public Object requestBegin(Object socket, HttpRequest request) { return socket == null ? null : d.requestBegin(socket, request); }
    @Override public void requestEnd(Object req, HttpRequest request, long bytesRead) { if (req != null) d.requestEnd(req, request, bytesRead); }
    @Override public void requestReset(Object req) { if (req != null) d.requestReset(req); }
    @Override public void responseBegin(Object req, HttpResponse response) { if (req != null) d.responseBegin(req, response); }
    @Override public Object responsePushed(Object socket, HttpMethod method, String uri, HttpResponse response) {
      return socket == null ? null : d.responsePushed(socket, method, uri, response);
    }
    @Override public void responseEnd(Object req, HttpResponse response, long bytesWritten) { if (req != null) d.responseEnd(req, response, bytesWritten); }
    @Override public Object connected(Object socket, Object req, ServerWebSocket ws) {
      return socket == null || req == null ? null : d.connected(socket, req, ws);
    }
    @Override public void disconnected(Object ws) { if (ws != null) d.disconnected(ws); }
    @Override public void requestRouted(Object req, String route) { if (req != null) d.requestRouted(req, route); }
    @Override public Object connected(SocketAddress remote, String remoteName) { return d.connected(remote, remoteName); }
    @Override public void disconnected(Object socket, SocketAddress remote) { if (socket != null) d.disconnected(socket, remote); }
    @Override public void bytesRead(Object socket, SocketAddress remote, long n) { if (socket != null) d.bytesRead(socket, remote, n); }
    @Override public void bytesWritten(Object socket, SocketAddress remote, long n) { if (socket != null) d.bytesWritten(socket, remote, n); }
    @Override public void exceptionOccurred(Object socket, SocketAddress remote, Throwable t) { if (socket != null) d.exceptionOccurred(socket, remote, t); }
    @Override public void close() { d.close(); }
  }
}
