package narwhal.launcher;

import com.hazelcast.partition.NoDataMemberInClusterException;
import narwhal.common.config.AdminConfig;
import narwhal.common.config.ClusterConfig;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin command's join failure names its likely cause: while a replica is frozen (SIGSTOP) the others accept the
 * command's connection but admit no new member until they expel the frozen one, so "no replica is reachable, start a
 * replica" would send the operator the wrong way.
 */
class AdminJoinFailureTest {

  @Test
  void membersThatAcceptConnectionsAreNotReportedUnreachable() throws Exception {
    try (ServerSocket listening = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      String message = AdminCli.joinFailure(view(listening.getLocalPort()), new NoDataMemberInClusterException("Partition owner is null"));
      assertTrue(message.contains("127.0.0.1:" + listening.getLocalPort() + "] accept connections but did not admit this command"), message);
      assertTrue(message.contains("try again"), message);
    }
  }

  @Test
  void membersThatRefuseConnectionsAreUnreachable() throws Exception {
    int closed;
    try (ServerSocket socket = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      closed = socket.getLocalPort();
    }
    String message = AdminCli.joinFailure(view(closed), new NoDataMemberInClusterException("Partition owner is null"));
    assertTrue(message.contains("no router replica of cluster \"narwhal\" is reachable at [127.0.0.1:" + closed + "]"), message);
  }

  private static NarwhalConfig.AdminView view(int port) {
    return new NarwhalConfig.AdminView(new ClusterConfig(true, "narwhal", List.of("127.0.0.1:" + port), 5701, "127.0.0.1"),
        new AdminConfig(AdminConfig.DEFAULT_TOKEN_ENV, ""));
  }
}
