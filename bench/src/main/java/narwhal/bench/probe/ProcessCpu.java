package narwhal.bench.probe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time a process (and its descendants, for nginx's workers) has used, from {@code /proc/<pid>/stat}
 * (user + system, in clock ticks of 1/100 s). Returns -1 where {@code /proc} is not there.
 */
public final class ProcessCpu {
  private static final double TICKS_PER_SECOND = 100.0;

  private ProcessCpu() {
  }

  public static double seconds(long pid) {
    try {
      return statSeconds(Path.of("/proc/" + pid + "/stat"));
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** User + system time of a {@code stat} file of {@code /proc} (a process's or one of its threads'). */
  private static double statSeconds(Path stat) throws IOException {
    String text = Files.readString(stat);
    String[] f = text.substring(text.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / TICKS_PER_SECOND;
  }

  /** The process and every live descendant. */
  public static double treeSeconds(ProcessHandle process) {
    double total = seconds(process.pid());
    if (total < 0) return -1;
    for (ProcessHandle child : process.descendants().toList()) {
      double s = seconds(child.pid());
      if (s > 0) total += s;
    }
    return total;
  }

  /**
   * CPU seconds of a JVM's JIT compiler threads ({@code C1 CompilerThre…}, {@code C2 CompilerThre…} in
   * each {@code comm} under {@code /proc/<pid>/task}); -1 where {@code /proc} is not there. Compilers still busy mean the code measured
   * is still partly interpreted or profiled, and their own CPU is counted in the process's.
   */
  public static double compilerSeconds(long pid) {
    Path tasks = Path.of("/proc/" + pid + "/task");
    try (var threads = Files.list(tasks)) {
      return threads.mapToDouble(ProcessCpu::compilerThreadSeconds).sum();
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static double compilerThreadSeconds(Path task) {
    try {
      String name = Files.readString(task.resolve("comm")).trim();
      if (!name.startsWith("C1 CompilerThre") && !name.startsWith("C2 CompilerThre")) return 0;
      return statSeconds(task.resolve("stat"));
    } catch (IOException | RuntimeException threadGone) {
      return 0;
    }
  }

  /**
   * Seconds the threads of a process now alive have spent runnable but waiting for a core (the second field of each of its
   * threads' {@code schedstat} under {@code /proc/<pid>/task}, in ns); -1 where {@code /proc} has no schedstat. On a machine whose cores
   * are shared, the part of a request's latency that is queueing for the CPU rather than work.
   */
  public static double waitSeconds(long pid) {
    Path tasks = Path.of("/proc/" + pid + "/task");
    try (var threads = Files.list(tasks)) {
      return threads.mapToLong(ProcessCpu::threadWaitNanos).sum() / 1e9;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static long threadWaitNanos(Path task) {
    try {
      return Long.parseLong(Files.readString(task.resolve("schedstat")).trim().split(" ")[1]);
    } catch (IOException | RuntimeException threadGone) {
      return 0;
    }
  }

  public static double self() {
    return seconds(ProcessHandle.current().pid());
  }

  public static double selfCompiler() {
    return compilerSeconds(ProcessHandle.current().pid());
  }
}
