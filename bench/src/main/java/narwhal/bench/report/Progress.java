package narwhal.bench.report;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Progress lines for long runs: {@code [scenario mm:ss] what is happening}, printed as the run goes. */
public final class Progress {
  private final String scenario;
  private final long started = System.nanoTime();

  public Progress(String scenario) {
    this.scenario = scenario;
  }

  public void say(String line) {
    long s = (System.nanoTime() - started) / 1_000_000_000L;
    System.out.printf("[%s %02d:%02d] %s%n", scenario, s / 60, s % 60, line);
    System.out.flush();
  }

  /** Prints {@code status} every {@code periodMs} until the returned handle is closed. */
  public Ticker every(long periodMs, Supplier<String> status) {
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "bench-progress");
      t.setDaemon(true);
      return t;
    });
    timer.scheduleAtFixedRate(() -> {
      try {
        say(status.get());
      } catch (RuntimeException e) {
        say("(progress unavailable: " + e.getMessage() + ")");
      }
    }, periodMs, periodMs, TimeUnit.MILLISECONDS);
    return timer::shutdownNow;
  }

  /** Stops a periodic progress line. */
  @FunctionalInterface
  public interface Ticker extends AutoCloseable {
    @Override
    void close();
  }
}
