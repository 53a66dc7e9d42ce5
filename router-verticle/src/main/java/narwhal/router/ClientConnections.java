package narwhal.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import narwhal.common.config.ServerConfig;

import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The client connections a replica holds open at once, across its event loops (docs/operations.md#connection-limits):
 * past {@code server.max_connections} a new one is refused, closed as it arrives and counted. Its default keeps
 * descriptors in reserve below the process's limit, so the health port, the engine legs, the cluster and the fleet
 * file still open theirs when the client port is full.
 */
final class ClientConnections {
  /** Descriptors kept for everything but client connections: a quarter of the limit, at least this many. */
  static final int MIN_RESERVE = 256;
  /** The cap when the process's descriptor limit cannot be read (not a Unix JVM). */
  static final int UNKNOWN_LIMIT_CAP = 10_000;

  private final AtomicInteger open = new AtomicInteger();
  private final Counter refused;
  private final int automatic;

  ClientConnections(MeterRegistry registry, long descriptorLimit) {
    this.automatic = automaticCap(descriptorLimit);
    refused = Counter.builder("narwhal.connections.refused")
        .description("client connections closed as they arrived: server.max_connections were open").register(registry);
    Gauge.builder("narwhal.connections.open", open, AtomicInteger::get).description("client connections open")
        .register(registry);
  }

  /** For this process: its descriptor limit as the JVM reads it (on Linux, the soft limit the JVM raised at start). */
  static ClientConnections of(MeterRegistry registry) {
    long limit = ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix
        ? unix.getMaxFileDescriptorCount() : -1;
    return new ClientConnections(registry, limit);
  }

  /** The cap {@code server.max_connections} 0 stands for: the limit less a quarter of it (at least {@link #MIN_RESERVE}). */
  static int automaticCap(long descriptorLimit) {
    if (descriptorLimit <= 0) return UNKNOWN_LIMIT_CAP;
    long reserve = Math.max(MIN_RESERVE, descriptorLimit / 4);
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, descriptorLimit - reserve));
  }

  /** The cap in force under {@code server}. */
  int cap(ServerConfig server) {
    return server.maxConnections() == ServerConfig.AUTO_MAX_CONNECTIONS ? automatic : server.maxConnections();
  }

  /** A connection arrived: whether it may stay open (counted until {@link #closed}); if not, it is counted as refused. */
  boolean admit(ServerConfig server) {
    int cap = cap(server);
    if (open.incrementAndGet() <= cap) return true;
    open.decrementAndGet();
    refused.increment();
    return false;
  }

  /** An admitted connection closed. */
  void closed() {
    open.decrementAndGet();
  }
}
