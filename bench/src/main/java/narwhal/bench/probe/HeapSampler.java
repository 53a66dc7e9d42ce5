package narwhal.bench.probe;

import io.vertx.core.json.JsonArray;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * Samples the router's heap over JMX once a second on its own thread: time, a load figure (streams open,
 * requests in flight), heap in use, heap after the last collection. Keeps the peaks and the series for charts.
 */
public final class HeapSampler {
  private final JvmProbe probe;
  private final List<double[]> rows = new ArrayList<>();
  private ScheduledExecutorService timer;
  private long t0;
  private volatile long lastUsed = -1;
  private volatile long lastAfterGc = -1;
  private long peakUsed = -1;
  private long peakAfterGc = -1;

  public HeapSampler(JvmProbe probe) {
    this.probe = probe;
  }

  public HeapSampler start(IntSupplier load) {
    t0 = System.nanoTime();
    timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "bench-heap-sampler");
      t.setDaemon(true);
      return t;
    });
    timer.scheduleAtFixedRate(() -> {
      try {
        long used = probe.heapUsed();
        long after = probe.heapAfterLastGc();
        lastUsed = used;
        lastAfterGc = after;
        synchronized (this) {
          peakUsed = Math.max(peakUsed, used);
          peakAfterGc = Math.max(peakAfterGc, after);
          rows.add(new double[] {seconds(), load.getAsInt(), used / 1048576.0, after / 1048576.0});
        }
      } catch (RuntimeException e) {
        // the router may be gone; the scenario's verdicts say so
      }
    }, 0, 1, TimeUnit.SECONDS);
    return this;
  }

  /** Seconds since {@link #start}. */
  public double seconds() {
    return (System.nanoTime() - t0) / 1e9;
  }

  public void stop() {
    if (timer != null) timer.shutdownNow();
  }

  public long lastUsed() {
    return lastUsed;
  }

  public long lastAfterGc() {
    return lastAfterGc;
  }

  public synchronized long peakUsed() {
    return peakUsed;
  }

  public synchronized long peakAfterGc() {
    return peakAfterGc;
  }

  /** Column k (0 load, 1 heap MiB, 2 after-GC MiB) against seconds. */
  public synchronized List<double[]> series(int k) {
    List<double[]> out = new ArrayList<>();
    for (double[] r : rows) if (r[k + 1] >= 0) out.add(new double[] {r[0], r[k + 1]});
    return out;
  }

  public synchronized JsonArray toJson() {
    JsonArray out = new JsonArray();
    rows.forEach(r -> out.add(new JsonArray().add(r[0]).add(r[1]).add(r[2]).add(r[3])));
    return out;
  }
}
