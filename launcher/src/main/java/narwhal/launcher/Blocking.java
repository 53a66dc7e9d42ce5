package narwhal.launcher;

import io.vertx.core.Future;

/** Waits on a future from the command-line thread (never an event loop) and keeps the process alive while serving. */
final class Blocking {
  private Blocking() {
  }

  static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CommandFailure("interrupted");
    } catch (java.util.concurrent.ExecutionException e) {
      throw new CommandFailure(e.getCause() == null ? e.getMessage() : e.getCause().getMessage());
    }
  }

  static void parkUntilInterrupted(Runnable onShutdown) {
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
