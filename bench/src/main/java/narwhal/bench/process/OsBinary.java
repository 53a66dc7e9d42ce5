package narwhal.bench.process;

import narwhal.bench.probe.JvmProbe;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A program from the OS packages (nginx, haproxy): found in the sbin and bin directories, then the PATH, and stopped
 * the way its package's service would stop it.
 */
public final class OsBinary {
  private OsBinary() {
  }

  static Optional<Path> find(String name) {
    for (String dir : List.of("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin")) {
      Path p = Path.of(dir, name);
      if (Files.isExecutable(p)) return Optional.of(p);
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(":")) {
        Path p = Path.of(dir, name);
        if (!dir.isEmpty() && Files.isExecutable(p)) return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /** What a started program wrote, read when it exits early. */
  interface Output {
    String read() throws IOException;
  }

  /**
   * Waits up to 10 s for {@code process} to listen on loopback {@code port}. One that exits first fails with what it
   * wrote; one that does not listen in time is killed and fails.
   */
  static void awaitListening(String name, Process process, int port, Output output) throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited with " + process.exitValue() + ": " + output.read());
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        JvmProbe.sleep(50);
      }
    }
    process.destroyForcibly();
    throw new IllegalStateException(name + " did not listen on " + port + " within 10 s");
  }

  /** SIGTERM, then SIGKILL if the process has not exited within 10 s. */
  static void stop(Process process) {
    if (!process.isAlive()) return;
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
