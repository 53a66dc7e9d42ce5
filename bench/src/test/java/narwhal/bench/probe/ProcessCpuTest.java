package narwhal.bench.probe;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcessCpuTest {

  @Test
  void compilerCpuIsPartOfTheProcessCpu() {
    long pid = ProcessHandle.current().pid();
    long sum = 0;
    for (int i = 0; i < 50_000_000; i++) sum += Long.numberOfTrailingZeros(i) ^ i;
    assertTrue(sum != 0);
    double jit = ProcessCpu.compilerSeconds(pid);
    double all = ProcessCpu.seconds(pid);
    assertTrue(jit > 0, "this JVM's C1/C2 threads have compiled something by now: " + jit);
    assertTrue(jit <= all, "compilers " + jit + " s within the process's " + all + " s");
  }

  @Test
  void unreadableProcessIsMinusOne() {
    assertEquals(-1, ProcessCpu.compilerSeconds(Long.MAX_VALUE));
    assertEquals(-1, ProcessCpu.seconds(Long.MAX_VALUE));
  }
}
