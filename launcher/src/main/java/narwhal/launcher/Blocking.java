package narwhal.launcher;

import io.vertx.core.Future;

/**
 * The command-line thread (never an event loop) waiting on a future, and keeping the process alive while serving.
 * {@link #await} is Vert.x's {@link Future#await()} (on a plain thread it blocks on a latch) with the failure turned
 * into a {@link CommandFailure}, so a command that cannot go on prints one line rather than a stack trace.
 */
public final class Blocking {
  private Blocking() {
  }

  public static <T> T await(Future<T> future) {
    try {
      return future.await();
    } catch (Exception e) {
      if (e instanceof InterruptedException) Thread.currentThread().interrupt();
      throw new CommandFailure(e instanceof InterruptedException ? "interrupted" : e.getMessage());
    }
  }

  public static void parkUntilInterrupted(Runnable onShutdown) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        onShutdown.run();
      } catch (RuntimeException e) {
        System.err.println("narwhal: stopping failed: " + e.getMessage());
      }
    }, "narwhal-shutdown"));
    try {
      Thread.currentThread().join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
