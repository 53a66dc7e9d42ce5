package narwhal.bench.probe;

import com.sun.management.GarbageCollectorMXBean;
import com.sun.management.GcInfo;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import javax.management.MBeanServerConnection;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Reads another JVM's heap over JMX on loopback (the router subprocess is started with a JMX port): heap in
 * use now, heap in use after its most recent garbage collection (what survived it: the live set plus
 * whatever was promoted), and a way to request a full collection. Blocking calls: use from the command-line
 * thread or a sampler thread, never from an event loop.
 */
public final class JvmProbe implements AutoCloseable {
  private final JMXConnector connector;
  private final MemoryMXBean memory;
  private final List<GarbageCollectorMXBean> collectors = new ArrayList<>();
  private final Set<String> heapPools;

  private JvmProbe(JMXConnector connector) throws java.io.IOException {
    this.connector = connector;
    MBeanServerConnection conn = connector.getMBeanServerConnection();
    this.memory = ManagementFactory.newPlatformMXBeanProxy(conn, ManagementFactory.MEMORY_MXBEAN_NAME, MemoryMXBean.class);
    for (java.lang.management.GarbageCollectorMXBean gc : ManagementFactory.getPlatformMXBeans(conn, java.lang.management.GarbageCollectorMXBean.class)) {
      collectors.add(ManagementFactory.newPlatformMXBeanProxy(conn, gc.getObjectName().toString(), GarbageCollectorMXBean.class));
    }
    this.heapPools = ManagementFactory.getPlatformMXBeans(conn, MemoryPoolMXBean.class).stream()
        .filter(p -> p.getType() == MemoryType.HEAP).map(MemoryPoolMXBean::getName).collect(Collectors.toSet());
  }

  /** Connects to {@code 127.0.0.1:port}, retrying for up to {@code timeoutMs} while the agent comes up. */
  public static JvmProbe connect(int port, long timeoutMs) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi");
        return new JvmProbe(JMXConnectorFactory.connect(url));
      } catch (Exception e) {
        last = e;
        sleep(100);
      }
    }
    throw new IllegalStateException("cannot reach the router's JMX agent on port " + port + ": " + last);
  }

  public long heapUsed() {
    return memory.getHeapMemoryUsage().getUsed();
  }

  public long heapCommitted() {
    return memory.getHeapMemoryUsage().getCommitted();
  }

  /** Heap in use right after the most recent collection of any kind, or -1 before the first one. */
  public long heapAfterLastGc() {
    GcInfo latest = null;
    for (GarbageCollectorMXBean gc : collectors) {
      GcInfo info = gc.getLastGcInfo();
      if (info != null && (latest == null || info.getEndTime() > latest.getEndTime())) latest = info;
    }
    if (latest == null) return -1;
    long used = 0;
    for (var e : latest.getMemoryUsageAfterGc().entrySet()) {
      if (heapPools.contains(e.getKey())) used += ((MemoryUsage) e.getValue()).getUsed();
    }
    return used;
  }

  /** Collection count over every collector. */
  public long gcCount() {
    long n = 0;
    for (GarbageCollectorMXBean gc : collectors) n += Math.max(0, gc.getCollectionCount());
    return n;
  }

  /** Requests a full collection ({@code System.gc()}) and returns the heap in use after it. */
  public long fullGcThenUsed() {
    memory.gc();
    return heapUsed();
  }

  @Override
  public void close() {
    try {
      connector.close();
    } catch (Exception ignored) {
      // the process may already be gone
    }
  }

  public static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
