package narwhal.launcher;

/**
 * Gives the JVM's common fork-join pool at least two threads, before anything uses it. With fewer (the default on a
 * 2-core machine or a pod limited to 1–2 CPUs: processors − 1), Hazelcast completes every asynchronous operation —
 * each shared-map read and write Vert.x makes — on a thread of its own started for it ({@code ConcurrencyUtil}'s
 * fallback executor): about 500 threads started and ended per second in an idle replica with 64 engines. An operator's
 * own {@code -Djava.util.concurrent.ForkJoinPool.common.parallelism} is kept.
 */
final class AsyncPool {
  static final String PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";

  private AsyncPool() {
  }

  /** Call first thing in {@code main}: the pool reads the property once, when it is first used. */
  static void atLeastTwoThreads() {
    if (System.getProperty(PARALLELISM) == null) {
      System.setProperty(PARALLELISM, String.valueOf(Math.max(2, Runtime.getRuntime().availableProcessors() - 1)));
    }
  }
}
