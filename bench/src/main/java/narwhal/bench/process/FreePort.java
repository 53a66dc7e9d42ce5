package narwhal.bench.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/** A loopback port free right now (a process started next can take it; a small race, fine on one machine). */
public final class FreePort {
  private FreePort() {
  }

  public static int pick() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      socket.setReuseAddress(true);
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The lowest port of the run {@link #runBelowEphemeral} looks in. */
  private static final int LOW_PORT = 20_000;

  /**
   * The first of {@code count} consecutive loopback ports free right now, all below the kernel's ephemeral range (where
   * port-0 listeners such as simulated engines land): for a Hazelcast member, which looks for the others on the ports
   * after its own and does not finish joining when a listener that is not Hazelcast answers there.
   */
  public static int runBelowEphemeral(int count) {
    int top = ephemeralStart();
    if (top - count <= LOW_PORT) throw new IllegalStateException("the ephemeral ports start at " + top + ": no room below them from " + LOW_PORT);
    for (int attempt = 0; attempt < 200; attempt++) {
      int base = ThreadLocalRandom.current().nextInt(LOW_PORT, top - count);
      if (allFree(base, count)) return base;
    }
    throw new IllegalStateException("no " + count + " consecutive free ports between " + LOW_PORT + " and " + top);
  }

  /** The first ephemeral port ({@code /proc/sys/net/ipv4/ip_local_port_range}; Linux's default 32768 where unreadable). */
  static int ephemeralStart() {
    try {
      // readString reads a /proc file short (its size reads 0): lines are read to the end
      return Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0).trim().split("\\s+")[0]);
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }

  private static boolean allFree(int base, int count) {
    for (int port = base; port < base + count; port++) {
      try (ServerSocket free = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        // bound, so free: closed at once
      } catch (IOException taken) {
        return false;
      }
    }
    return true;
  }
}
