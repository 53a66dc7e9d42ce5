package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica whose cluster join meets a port where something other than a Narwhal replica listens (docs/operations.md#what-the-cluster-remembers):
 * Hazelcast tries the members given without a port on {@code cluster.port} and the ports after it, and a plain TCP
 * listener there (an engine on the same host, say) answers the connection but never the join, which Hazelcast kept
 * trying for its default 300 s. The replica gives up after {@code cluster.join_timeout_s} instead, with a message
 * naming {@code cluster.port} and {@code cluster.members}. A real router process; the listener is a plain
 * {@link ServerSocket} that reads and never answers.
 */
@Timeout(300)
class JoinBoundTest {
  @Test
  void aJoinMeetingAPlainTcpListenerOnAPortAfterClusterPortGivesUpNamingThePortAndTheMembers() throws Exception {
    try (ClusterHarness h = ClusterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, o) -> { });
         Silent listener = new Silent(h.basePort + 1)) {
      JsonObject fleet = h.fleetJson();
      fleet.getJsonObject("cluster").put("members", new JsonArray().add("127.0.0.1"));
      Path file = ReplicaProcess.writeFleet(fleet);
      IllegalStateException gaveUp = assertThrows(IllegalStateException.class, () -> ReplicaProcess.start(file, ClusterHarness.TOKEN,
          "cluster.port=" + h.basePort, "cluster.join_timeout_s=3"));
      String out = gaveUp.getMessage();
      assertTrue(listener.accepted() > 0, "the join did reach the listener on cluster.port + 1");
      assertTrue(out.contains("could not join the cluster within cluster.join_timeout_s = 3.0 s"), out);
      assertTrue(out.contains("cluster.port " + h.basePort), out);
      assertTrue(out.contains("cluster.members [127.0.0.1]"), out);
      assertTrue(out.contains("ended before it served"), "the replica exits: " + out);
    }
  }

  /** A TCP listener that accepts, reads whatever comes and never writes a byte. */
  static final class Silent implements AutoCloseable {
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    Silent(int port) throws IOException {
      server = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
      acceptor = new Thread(() -> {
        while (!server.isClosed()) {
          try {
            Socket s = server.accept();
            sockets.add(s);
            Thread reader = new Thread(() -> drain(s), "silent-reader");
            reader.setDaemon(true);
            reader.start();
          } catch (IOException e) {
            return;
          }
        }
      }, "silent-acceptor");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    private static void drain(Socket s) {
      try (InputStream in = s.getInputStream()) {
        byte[] buf = new byte[4096];
        while (in.read(buf) >= 0) {
          // read and drop: the listener never answers
        }
      } catch (IOException ignored) {
        // closed
      }
    }

    int accepted() {
      return sockets.size();
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (Socket s : sockets) s.close();
    }
  }
}
