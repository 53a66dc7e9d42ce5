package narwhal.bench.process;

import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An OTLP/HTTP trace sink for {@code bench --tracing}: accepts every {@code POST /v1/traces}, reads the body and
 * answers an empty export response, counting exports and bytes so a report can show that spans really flowed. It
 * runs on its own thread so the routers' export cost, not a slow collector, is what the scenario measures.
 */
public final class OtlpSink implements AutoCloseable {
  private final HttpServer server;
  private final AtomicLong exports = new AtomicLong();
  private final AtomicLong bytes = new AtomicLong();

  private OtlpSink(HttpServer server) {
    this.server = server;
  }

  public static OtlpSink start() {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the OTLP sink: " + e.getMessage(), e);
    }
    OtlpSink sink = new OtlpSink(server);
    server.createContext("/v1/traces", exchange -> {
      try (InputStream in = exchange.getRequestBody()) {
        sink.bytes.addAndGet(in.transferTo(java.io.OutputStream.nullOutputStream()));
      }
      sink.exports.incrementAndGet();
      exchange.getResponseHeaders().add("content-type", "application/x-protobuf");
      exchange.sendResponseHeaders(200, -1);
      exchange.close();
    });
    server.setExecutor(Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "otlp-sink");
      t.setDaemon(true);
      return t;
    }));
    server.start();
    return sink;
  }

  /** The base URL for {@code telemetry.otlp_endpoint}. */
  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  public long exports() {
    return exports.get();
  }

  public long bytes() {
    return bytes.get();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
