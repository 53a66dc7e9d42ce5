package narwhal.bench.process;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link OsBinary#awaitListening}, with real processes and a real loopback socket. */
class OsBinaryTest {

  @Test
  void aListeningPortReturns() throws Exception {
    Process sleeper = new ProcessBuilder("sleep", "30").start();
    try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      OsBinary.awaitListening("sleep", sleeper, server.getLocalPort(), () -> "never read");
      assertTrue(sleeper.isAlive());
    } finally {
      sleeper.destroyForcibly().waitFor();
    }
  }

  @Test
  void aProcessThatExitsFailsWithWhatItWrote() throws Exception {
    Process failing = new ProcessBuilder("false").start();
    failing.waitFor();
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> OsBinary.awaitListening("false", failing, FreePort.pick(), () -> "its output"));
    assertEquals("false exited with 1: its output", e.getMessage());
  }
}
