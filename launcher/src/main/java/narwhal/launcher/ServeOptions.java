package narwhal.launcher;

import narwhal.common.config.NarwhalConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Options shared by the commands that start a router. */
public final class ServeOptions {
  @Mixin
  FleetFile fleetFile = new FleetFile();

  @Option(names = "--preflight", defaultValue = "warn",
      description = "strict: exit when an engine fails its checks (CI); warn: serve the engines that passed, the others unchecked until their readmission checks pass; skip (default: ${DEFAULT-VALUE})")
  String preflight;

  @Option(names = "--cluster",
      description = "join the router cluster named by the fleet file's cluster.* keys (as cluster.enabled: true)")
  boolean cluster;

  /**
   * The fleet file with its overrides, and clustering switched on by {@code --cluster}: the last override, so every hot
   * reload re-applies it like the others (else each reload would see {@code cluster.enabled} change).
   */
  public NarwhalConfig config() {
    if (cluster && !fleetFile.sets.contains(CLUSTER_ON)) fleetFile.sets.add(CLUSTER_ON);
    return fleetFile.load();
  }

  private static final String CLUSTER_ON = "cluster.enabled=true";

  /** Starts a replica for the fleet file and watches the file for hot reload. */
  public NarwhalNode start(NarwhalConfig config) {
    NarwhalNode node = Blocking.await(NarwhalNode.start(config, mode(), System.out::println));
    Blocking.await(node.watch(fleetFile.fleet, fleetFile.overrides()));
    return node;
  }

  /**
   * Serves until SIGTERM or Ctrl-C, then stops gracefully; {@code behindBalancer} false skips the drain delay (see
   * {@link NarwhalNode#shutdown(java.util.function.Consumer, boolean)}).
   */
  public static int serveUntilStopped(NarwhalNode node, boolean behindBalancer) {
    Blocking.parkUntilInterrupted(() -> Blocking.await(node.shutdown(System.out::println, behindBalancer)));
    return 0;
  }

  NarwhalNode.PreflightMode mode() {
    return switch (preflight) {
      case "strict" -> NarwhalNode.PreflightMode.STRICT;
      case "warn" -> NarwhalNode.PreflightMode.WARN;
      case "skip" -> NarwhalNode.PreflightMode.SKIP;
      default -> throw new CommandFailure("--preflight: \"" + preflight + "\" is not valid: expected strict, warn or skip");
    };
  }
}
