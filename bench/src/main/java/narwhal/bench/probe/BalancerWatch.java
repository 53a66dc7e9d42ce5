package narwhal.bench.probe;

import narwhal.bench.process.HaproxyProcess;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Polls haproxy's stats page every {@value #INTERVAL_MS} ms on a thread of its own and keeps, per poll, how many
 * backend servers were UP: a rolling restart must never leave the balancer without one. The polls that got no answer
 * are not counted.
 */
public final class BalancerWatch implements AutoCloseable {
  public static final long INTERVAL_MS = 100;

  /** One poll: when ({@link System#nanoTime()}), how many servers were UP and each server's state. */
  public record Poll(long nanos, int up, Map<String, HaproxyProcess.ServerState> servers) {
  }

  private final HaproxyProcess haproxy;
  private final List<Poll> polls = new ArrayList<>();
  private final Thread thread;
  private volatile boolean stop;

  public BalancerWatch(HaproxyProcess haproxy) {
    this.haproxy = haproxy;
    this.thread = new Thread(this::run, "balancer-watch");
    thread.setDaemon(true);
  }

  public BalancerWatch start() {
    thread.start();
    return this;
  }

  private void run() {
    while (!stop) {
      Map<String, HaproxyProcess.ServerState> servers = haproxy.servers();
      if (!servers.isEmpty()) {
        int up = (int) servers.values().stream().filter(HaproxyProcess.ServerState::up).count();
        synchronized (polls) {
          polls.add(new Poll(System.nanoTime(), up, servers));
        }
      }
      JvmProbe.sleep(INTERVAL_MS);
    }
  }

  /** The polls made since {@code nanos}. */
  public List<Poll> since(long nanos) {
    synchronized (polls) {
      return polls.stream().filter(p -> p.nanos() >= nanos).toList();
    }
  }

  /** The most sessions haproxy had open to {@code server} in one poll since {@code nanos}; -1 when none answered. */
  public int mostSessionsSince(String server, long nanos) {
    return since(nanos).stream().map(p -> p.servers().get(server)).filter(s -> s != null)
        .mapToInt(HaproxyProcess.ServerState::sessions).max().orElse(-1);
  }

  /** The fewest servers UP in one poll since {@code nanos}; -1 when no poll was answered. */
  public int fewestUpSince(long nanos) {
    return since(nanos).stream().mapToInt(Poll::up).min().orElse(-1);
  }

  /** The first poll since {@code nanos} in which {@code server} was (or was not, {@code up} false) UP; null if none yet. */
  public Poll first(String server, boolean up, long nanos) {
    for (Poll p : since(nanos)) {
      HaproxyProcess.ServerState s = p.servers().get(server);
      if (s != null && s.up() == up) return p;
    }
    return null;
  }

  /** Waits until a poll since {@code nanos} shows {@code server} UP (or not); fails after {@code timeoutMs}. */
  public Poll await(String server, boolean up, long nanos, long timeoutMs) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    Poll p;
    while ((p = first(server, up, nanos)) == null) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("haproxy did not show " + server + (up ? " UP" : " DOWN") + " within " + timeoutMs + " ms: "
            + haproxy.servers());
      }
      JvmProbe.sleep(INTERVAL_MS / 2);
    }
    return p;
  }

  @Override
  public void close() {
    stop = true;
    try {
      thread.join(2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
