package narwhal.launcher;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Hazelcast ports for the tests' clusters on 127.0.0.1. A cluster of a test uses a base port and the few after it
 * (one per member, and a join tries {@code hazelcast.tcp.join.port.try.count} ports from a member given without one;
 * a member whose port is taken moves up). The launcher's test classes run in several surefire forks at once
 * (launcher/pom.xml), so each fork draws from a block of its own: a test's cluster cannot land on, or knock at, the
 * ports of a cluster another fork runs at the same time. Within a fork tests run one after another.
 *
 * <p>The blocks lie in 20000-31999, below Linux's ephemeral ports (32768 up), where port-0 servers and outgoing
 * connections land.
 */
final class ClusterPorts {
  private static final int FIRST = 20_000;
  private static final int BLOCKS = 4;
  private static final int BLOCK = 3_000;
  /** A block's top ports stay unused: a cluster of a base near the top still uses a few dozen ports above it. */
  private static final int SPARE = 200;

  private ClusterPorts() {
  }

  /** The surefire fork this JVM is (1, 2, ...; {@code narwhal.test.fork}, set from surefire's fork number), else 1. */
  static int fork() {
    try {
      return Math.max(1, Integer.parseInt(System.getProperty("narwhal.test.fork", "1").trim()));
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  /** A random base port, a multiple of 10, in this fork's block; the 10 ports from it are the cluster's. */
  static int base() {
    return block() + ThreadLocalRandom.current().nextInt((BLOCK - SPARE) / 10) * 10;
  }

  private static int block() {
    return FIRST + ((fork() - 1) % BLOCKS) * BLOCK;
  }

  private static final java.util.concurrent.atomic.AtomicInteger NEXT =
      new java.util.concurrent.atomic.AtomicInteger(ThreadLocalRandom.current().nextInt(BLOCK - SPARE));

  /**
   * A port of this fork's block that nothing listens on now, a different one each call: for a server a test starts
   * later, or an address that must stay dead meanwhile. Unlike a port 0 socket's port, outgoing connections (of this
   * fork or another) are never given it.
   */
  static int unused() {
    for (int i = 0; i < BLOCK - SPARE; i++) {
      int port = block() + Math.floorMod(NEXT.getAndIncrement(), BLOCK - SPARE);
      try (java.net.ServerSocket socket = new java.net.ServerSocket(port)) {
        return port;
      } catch (java.io.IOException taken) {
        // in use: the next one
      }
    }
    throw new IllegalStateException("no unused port in " + block() + "-" + (block() + BLOCK - SPARE - 1));
  }
}
