package narwhal.bench.probe;

import narwhal.bench.load.LatencyHistogram;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * A balancer's health check as haproxy makes it: every {@code periodMs}, a new TCP connection, {@code GET path}, the
 * whole answer read, the connection closed; timed from connect to the answer's end. Runs on a platform thread of its
 * own with blocking sockets, so the load generator's event loops do not delay it. Each probe is counted under the
 * label current when it started ({@link #label}): its time and its status ({@code 200}, {@code 503}, or
 * {@code error}/{@code timeout} when no answer came within {@code timeoutMs}, counted at that bound).
 */
public final class ReadinessProbe implements AutoCloseable {
  /** What the probes of one label saw. */
  public static final class Tally {
    public final LatencyHistogram latency = new LatencyHistogram();
    public final Map<String, Integer> statuses = new TreeMap<>();

    public long notOk() {
      return statuses.entrySet().stream().filter(e -> !e.getKey().equals("200")).mapToLong(Map.Entry::getValue).sum();
    }
  }

  private final int port;
  private final String path;
  private final long periodMs;
  private final int timeoutMs;
  private final Map<String, Tally> tallies = new LinkedHashMap<>();
  private final Thread thread;
  private volatile String label;
  private volatile boolean stop;

  public ReadinessProbe(int port, String path, long periodMs, int timeoutMs, String firstLabel) {
    this.port = port;
    this.path = path;
    this.periodMs = periodMs;
    this.timeoutMs = timeoutMs;
    this.label = firstLabel;
    this.thread = new Thread(this::run, "readiness-probe-" + port + path);
    thread.setDaemon(true);
  }

  public ReadinessProbe start() {
    thread.start();
    return this;
  }

  /** Counts the probes that start from now on under {@code name}. */
  public void label(String name) {
    label = name;
  }

  private void run() {
    long next = System.nanoTime();
    while (!stop) {
      String at = label;
      long t0 = System.nanoTime();
      String status = probe();
      long took = System.nanoTime() - t0;
      synchronized (tallies) {
        Tally t = tallies.computeIfAbsent(at, k -> new Tally());
        t.latency.record(took);
        t.statuses.merge(status, 1, Integer::sum);
      }
      next += periodMs * 1_000_000;
      long wait = next - System.nanoTime();
      if (wait > 0) {
        JvmProbe.sleep(wait / 1_000_000);
      } else {
        next = System.nanoTime();
      }
    }
  }

  private String probe() {
    try (Socket socket = new Socket()) {
      socket.setSoTimeout(timeoutMs);
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress("127.0.0.1", port), timeoutMs);
      OutputStream out = socket.getOutputStream();
      out.write(("GET " + path + " HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      byte[] buf = new byte[4096];
      StringBuilder head = new StringBuilder();
      int n;
      while ((n = in.read(buf)) >= 0) {
        if (head.length() < 16) head.append(new String(buf, 0, n, StandardCharsets.US_ASCII));
      }
      String line = head.toString();
      return line.startsWith("HTTP/1.") && line.length() >= 12 ? line.substring(9, 12) : "error";
    } catch (java.net.SocketTimeoutException e) {
      return "timeout";
    } catch (IOException e) {
      return "error";
    }
  }

  /** Each label's probes, in the order the labels were first used. */
  public Map<String, Tally> tallies() {
    synchronized (tallies) {
      return new LinkedHashMap<>(tallies);
    }
  }

  /** Every probe of the labels {@code include} accepts, merged. */
  public Tally merged(java.util.function.Predicate<String> include) {
    Tally all = new Tally();
    synchronized (tallies) {
      tallies.forEach((k, t) -> {
        if (!include.test(k)) return;
        all.latency.merge(t.latency);
        t.statuses.forEach((s, c) -> all.statuses.merge(s, c, Integer::sum));
      });
    }
    return all;
  }

  @Override
  public void close() {
    stop = true;
    try {
      thread.join(timeoutMs + 1_000L);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
