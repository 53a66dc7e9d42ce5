package narwhal.bench.process;

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
