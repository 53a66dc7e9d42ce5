package narwhal.bench.probe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A process's resident set size, from {@code VmRSS} of {@code /proc/<pid>/status}; -1 where {@code /proc} is not there. */
public final class ProcessRss {
  private ProcessRss() {
  }

  public static long bytes(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
      }
      return -1;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }
}
