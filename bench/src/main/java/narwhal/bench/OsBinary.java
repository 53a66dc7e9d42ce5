package narwhal.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** Finds a program from the OS packages (nginx, haproxy): the sbin and bin directories, then the PATH. */
final class OsBinary {
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
}
