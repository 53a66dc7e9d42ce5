package narwhal.bench.process;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A run of free ports below the ephemeral range: where no port-0 listener (a simulated engine) can be. */
class FreePortTest {

  @Test
  void aRunBelowTheEphemeralPortsIsFreeAndBelowThem() throws IOException {
    int ephemeral = FreePort.ephemeralStart();
    assertTrue(ephemeral > 1024, "the first ephemeral port, read whole: " + ephemeral);
    int base = FreePort.runBelowEphemeral(10);
    assertTrue(base + 10 <= ephemeral, base + " + 10 stays below " + ephemeral);
    for (int port = base; port < base + 10; port++) {
      try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        assertTrue(socket.isBound());
      }
    }
    try (ServerSocket any = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      assertTrue(any.getLocalPort() >= ephemeral, "a port-0 listener lands at " + any.getLocalPort() + ", in the ephemeral range");
    }
  }
}
